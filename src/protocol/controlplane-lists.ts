import * as z from "zod";
import { DeploymentStatus, RevisionStatus } from "./controlplane.ts";
import { DeploymentType } from "./controlplane-resource-spec.ts";

// The control plane's list routes: pages, their limit and offset, and each list's filters.

export const Page = <T extends z.ZodType>(item: T) => z.object({ resources: z.array(item), offset: z.int() });

/**
 * A list answer: `offset` is where the next page starts (the docs: "pass this value to subsequent requests"), the
 * request's offset plus the items answered. Past the last item that is the number of items, and the page there is
 * empty with the same offset: a client that passes it back walks every page once and stops at the empty one.
 */
export function pageAnswer<T>(resources: T[], requestedOffset: number): { resources: T[]; offset: number } {
  return { resources, offset: requestedOffset + resources.length };
}

const Limit = z.coerce
  .number({ message: "must be an integer" })
  .int({ message: "must be an integer" })
  .min(1, { message: "must be at least 1" })
  .max(100, { message: "must be at most 100" })
  .default(20);
const Offset = z.coerce
  .number({ message: "must be an integer" })
  .int({ message: "must be an integer" })
  .min(0, { message: "must not be negative" })
  .default(0);

export const ListQuery = z.looseObject({ limit: Limit, offset: Offset });

/** A comma-separated list of `item` (the docs' form for several values), as an array. */
const commaList = <T extends z.ZodType>(item: T) =>
  z.string().transform((text, ctx): z.output<T>[] => {
    const parts = text
      .split(",")
      .map((part) => part.trim())
      .filter(Boolean);
    if (parts.length === 0 || parts.length > 100) {
      ctx.addIssue({ code: "custom", message: "must name 1 to 100 comma-separated values" });
      return z.NEVER;
    }
    const values: z.output<T>[] = [];
    for (const part of parts) {
      const parsed = item.safeParse(part);
      if (!parsed.success) {
        ctx.addIssue({ code: "custom", message: `each comma-separated value: ${parsed.error.issues[0]!.message}` });
        return z.NEVER;
      }
      values.push(parsed.data);
    }
    return values;
  });

/** Documented filters this control plane cannot honour: refused, never ignored. */
const unsupportedFilter = (why: string) => z.never({ message: `not supported by this control plane: ${why}` }).optional();

export const DeploymentListQuery = z.strictObject({
  limit: Limit,
  offset: Offset,
  name_contains: z.string().max(100).optional(),
  status: commaList(DeploymentStatus).optional(),
  deployment_ids: commaList(z.uuid({ message: "must be UUIDs" })).optional(),
  deployment_type: commaList(DeploymentType).optional(),
  image_version: unsupportedFilter("its agent servers have no image version"),
  remote_reconciled: unsupportedFilter("nothing is reconciled remotely"),
  tag_value_ids: unsupportedFilter("deployments carry no tags"),
});
export type DeploymentListQuery = z.infer<typeof DeploymentListQuery>;

export const RevisionListQuery = z.strictObject({
  limit: Limit,
  offset: Offset,
  status: commaList(RevisionStatus).optional(),
  remote_reconciled: unsupportedFilter("nothing is reconciled remotely"),
});
