/**
 * What the beacon stores for an OTLP batch (otlp_batches.body, JSON text): the parsed request, serialised; or, when
 * parsing changed nothing in it (ParsedExport.canonical), the JSON text it arrived as, stored as it is rather than
 * serialised a second time. Either reads back (JSON.parse) as the same request.
 */
export class ReceivedJson {
  readonly text: string;
  constructor(text: string) {
    this.text = text;
  }
}

/** The text to store for `body`: a ReceivedJson's own text, anything else (a parsed request) as JSON. */
export function otlpBodyText(body: unknown): string {
  return body instanceof ReceivedJson ? body.text : JSON.stringify(body);
}
