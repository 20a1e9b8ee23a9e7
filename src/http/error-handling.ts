import type { FastifyError, FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { HttpError } from "../errors.ts";
import { RequestValidationError } from "./validate.ts";

function notFound(request: FastifyRequest, reply: FastifyReply): FastifyReply {
  return reply.code(404).send({ detail: `no route ${request.method} ${request.url.split("?")[0]}`, code: "ERR_NOT_FOUND" });
}

/**
 * Every error a server answers is JSON: 422 `{detail: [...]}` for validation, `{detail, code}` otherwise.
 * Malformed JSON is a validation failure of the body. 5xx never shows the cause: it is logged instead.
 */
export function installErrorHandling(app: FastifyInstance): void {
  // JSON only: a text/plain body would otherwise reach the handlers as a string.
  app.removeContentTypeParser("text/plain");
  // JSON routes read bodies as sent: a compressed one would fail as "not valid JSON", and a plain one labelled
  // compressed would pass, so any Content-Encoding is refused as an unsupported media type.
  const parseJson = app.getDefaultJsonParser("error", "error");
  app.removeContentTypeParser("application/json");
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    const encoding = request.headers["content-encoding"];
    if (encoding && encoding.toLowerCase() !== "identity") {
      return done(new HttpError(415, "ERR_CONTENT_ENCODING", `Content-Encoding ${encoding} is not supported here; send the JSON uncompressed`), undefined);
    }
    parseJson(request, body as string, done);
  });
  app.setErrorHandler((error: FastifyError | HttpError | Error, request, reply) => {
    // An unknown route is 404 whatever its body was.
    if (request.is404) return notFound(request, reply);
    if (error instanceof RequestValidationError) {
      return reply.code(422).send({ detail: error.detail });
    }
    if (error instanceof HttpError) {
      return reply.code(error.statusCode).send({ detail: error.message, code: error.code });
    }
    const fastifyError = error as FastifyError;
    if (fastifyError.code === "FST_ERR_CTP_EMPTY_JSON_BODY") {
      return reply.code(422).send({ detail: [{ loc: ["body"], msg: "Field required", type: "missing" }] });
    }
    if (fastifyError.code === "FST_ERR_CTP_INVALID_JSON_BODY" || (error instanceof SyntaxError && fastifyError.statusCode === 400)) {
      return reply.code(422).send({ detail: [{ loc: ["body"], msg: "Body is not valid JSON", type: "json_invalid" }] });
    }
    const status = fastifyError.statusCode ?? 500;
    if (status >= 400 && status < 500) {
      return reply.code(status).send({ detail: error.message, code: fastifyError.code ?? "ERR_BAD_REQUEST" });
    }
    request.log.error({ err: error }, "request failed");
    return reply.code(500).send({ detail: "internal error; see the server log", code: "ERR_INTERNAL" });
  });
  app.setNotFoundHandler(notFound);
}
