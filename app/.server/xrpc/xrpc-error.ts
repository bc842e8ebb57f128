import { AtriumError } from "../errors/atrium-error.ts";

/**
 * An error of the data server's own (atproto XRPC conventions): its XRPC
 * name is its stable code, e.g. `RecordAlreadyExists`, `InvalidSwap`.
 */
export class XrpcError extends AtriumError {
  constructor(status: number, name: string, message: string, options: { retryAfterSeconds?: number } = {}) {
    super(name, message, { status, xrpcName: name, retryAfterSeconds: options.retryAfterSeconds });
  }
}

export const invalidRequest = (message: string) => new XrpcError(400, "InvalidRequest", message);
