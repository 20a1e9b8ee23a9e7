// A bare two-hop relay for the OTLP floors, one process per hop as the sidecar and the beacon are:
//   node bench/relay-floor.ts sink <bytes|json|protobuf>              prints its URL; answers every POST 200
//   node bench/relay-floor.ts relay <bytes|json|protobuf> <sink URL>  prints its URL; forwards every POST body to the sink
// `json`: the relay parses each body and serialises it again and the sink parses it, the least any relay that
// filters JSON (and any receiver that validates it) must do. `protobuf`: the same with protobufjs's decode and
// encode of an OTLP metrics export request. `bytes`: both pass the bytes through unread.
import Fastify from "fastify";
import { Agent, request } from "undici";
import { otlpProtoTypes } from "../src/protocol/otlp-proto-schema.ts";

const [role, mode, sinkUrl] = process.argv.slice(2);
const contentType = mode === "protobuf" ? "application/x-protobuf" : "application/json";
const app = Fastify({ bodyLimit: 64 * 1024 * 1024 });
app.removeAllContentTypeParsers();
app.addContentTypeParser(contentType, { parseAs: "buffer" }, (_request, body, done) => done(null, body));
const metrics = otlpProtoTypes.requests.metrics;
const read = (body: Buffer): unknown =>
  mode === "json" ? JSON.parse(body.toString("utf8")) : mode === "protobuf" ? metrics.decode(body) : body;
const write = (message: unknown): string | Uint8Array =>
  mode === "json"
    ? JSON.stringify(message)
    : mode === "protobuf"
      ? metrics.encode(message as ReturnType<typeof metrics.decode>).finish()
      : (message as Buffer);

if (role === "sink") {
  app.post("/", async (req, reply) => {
    read(req.body as Buffer);
    return reply.code(200).send({});
  });
} else {
  const upstream = new Agent({ connections: 8 });
  app.post("/", async (req, reply) => {
    const forwarded = await request(sinkUrl!, {
      method: "POST",
      headers: { "content-type": contentType },
      body: write(read(req.body as Buffer)),
      dispatcher: upstream,
    });
    await forwarded.body.dump();
    if (forwarded.statusCode !== 200) throw new Error(`sink answered ${forwarded.statusCode}`);
    return reply.code(200).send({});
  });
}
await app.listen({ host: "127.0.0.1", port: 0 });
console.log(`http://127.0.0.1:${(app.server.address() as { port: number }).port}/`);
