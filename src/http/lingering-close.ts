import type { IncomingMessage, ServerResponse } from "node:http";

/** How long a connection answered before its body was read goes on taking (and dropping) what the client sends. */
export const LINGER_MS = 2_000;

/**
 * Closes a connection whose answer went out before its request body was read (a 413 on the declared length, a
 * refused credential, a 404), as RFC 9112 section 9.6 asks: the answer is written and this side of the connection
 * ended, then whatever the client is still sending is read and dropped, never held or charged, until the client
 * ends too, or for LINGER_MS at most. Closed at once (what Node does), the connection answers the client's next
 * bytes with a reset, and a client still writing its body sees that reset instead of the answer (the reset may
 * even discard the answer unread).
 */
export function lingerOnClose(response: ServerResponse, request: IncomingMessage): void {
  const socket = response.socket;
  if (!socket) return;
  // Node ends a `connection: close` answer's socket with destroySoon() once the answer is written.
  socket.destroySoon = () => {
    socket.end();
    // Once the client has ended too, closed as soon as the answer is all written (never cutting it short).
    const closeWhenWritten = () => (socket.writableFinished ? socket.destroy() : socket.once("finish", () => socket.destroy()));
    if (socket.readableEnded) return closeWhenWritten();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS).unref();
    socket.once("close", () => clearTimeout(timer));
    socket.once("end", closeWhenWritten);
    request.resume();
  };
}
