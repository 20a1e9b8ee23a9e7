import * as z from "zod";

// The control plane's auth setup routes (/v2/auth/...): connecting a source provider such as GitHub, one schema per
// wire shape. The deployment routes' shapes are in controlplane.ts.

/** GET /v2/auth/setup/{provider_id}: what the provider's redirect carries. */
export const SetupCallbackQuery = z.looseObject({
  code: z.string().optional(),
  state: z.string().optional(),
  setup_action: z.string().optional(),
  // Decimal digits only: z.coerce would take "" as 0 and "0x1f" or "1e3" as numbers.
  installation_id: z
    .string()
    .regex(/^-?\d{1,15}$/, { message: "Input should be a valid integer, unable to parse string as an integer" })
    .transform(Number)
    .optional(),
  error: z.string().optional(),
  error_description: z.string().optional(),
});
export type SetupCallbackQuery = z.infer<typeof SetupCallbackQuery>;

/**
 * An auth request: POST /v2/auth/providers/{provider_id}/auth-requests answers it with where to send the user and
 * the state the callback must bring back. Only that answer carries `state` and `authorize_url` (which holds the
 * state): the control plane keeps a hash of the state's secret part, so GET answers null for both.
 */
export const AuthRequest = z.object({
  auth_id: z.string(),
  provider_id: z.string(),
  state: z.string().nullable(),
  authorize_url: z.string().nullable(),
  /** expired: still pending when expires_at passed (its state is refused). */
  status: z.enum(["pending", "completed", "failed", "expired"]),
  /** Why a failed request failed (the provider's error code, or the token exchange's failure). */
  error: z.string().nullable(),
  created_at: z.string(),
  expires_at: z.string(),
});
export type AuthRequest = z.infer<typeof AuthRequest>;

export const Installation = z.object({
  id: z.string(),
  provider_id: z.string(),
  installation_id: z.int().nullable(),
  auth_id: z.string(),
  created_at: z.string(),
});
export type Installation = z.infer<typeof Installation>;
