/** An XRPC error: HTTP status plus the `{error, message}` body of the atproto conventions. */
export class XrpcError extends Error {
  constructor(
    readonly status: number,
    readonly error: string,
    message: string,
  ) {
    super(message);
    this.name = "XrpcError";
  }
}

export function xrpcErrorResponse(error: XrpcError, headers?: HeadersInit): Response {
  return Response.json({ error: error.error, message: error.message }, { status: error.status, headers });
}
