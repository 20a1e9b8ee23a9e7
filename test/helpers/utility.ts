// The privacy filter's utility figure: of the constant words of realistic platform text (test/helpers/platform-text.ts),
// the share that leaves the filter, each entry taken through the field it arrives in (span names that are paths through
// the endpoint template, the rest as free text).
import { endpointTemplate, looksLikeEndpoint } from "../../src/sidecar/privacy/endpoint-template.ts";
import { scrubText } from "../../src/sidecar/privacy/scrub.ts";
import { asSent, constantWords, PLATFORM_TEXT } from "./platform-text.ts";

export interface Utility {
  kept: number;
  total: number;
  /** Each entry that lost a constant word: what left, and the words lost. */
  losses: { out: string; lost: string[] }[];
}

export function utilityFigure(entries: readonly string[] = PLATFORM_TEXT): Utility {
  let kept = 0;
  let total = 0;
  const losses: Utility["losses"] = [];
  for (const entry of entries) {
    const sent = asSent(entry);
    const out = looksLikeEndpoint(sent) ? endpointTemplate(sent) : scrubText(sent);
    const left = new Set(out.split(/[^A-Za-z_]+/));
    const words = constantWords(entry);
    const lost = words.filter((word) => !left.has(word));
    total += words.length;
    kept += words.length - lost.length;
    if (lost.length > 0) losses.push({ out, lost });
  }
  return { kept, total, losses };
}
