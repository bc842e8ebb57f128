import type { NextFunction, Request, Response } from "express";
import type { Config } from "../app/.server/config.ts";
import type { ApiRequest } from "../app/.server/http/api-request.ts";
import { isCorsPath } from "./middleware.ts";

/** The API dispatcher the server build exports (app/entry.server.tsx → app/.server/http/api-routes.ts). */
export type ApiHandler = (path: string, request: ApiRequest) => Promise<globalThis.Response> | undefined;

/** Node's request seen through the small interface the JSON endpoints read: no Fetch objects per request. */
export function nodeApiRequest(req: Request, issuer: string): ApiRequest {
  // Buffered from the start: the body-limit counter already made the stream flow, so a listener
  // attached later could miss chunks. Bodies here are bounded by that limit.
  const body = new Promise<Buffer>((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on("data", (chunk: Buffer) => chunks.push(chunk));
    req.on("end", () => resolve(Buffer.concat(chunks)));
    req.on("error", reject);
    req.on("close", () => reject(new Error("request closed before its body ended")));
  });
  body.catch(() => {});
  const readBody = () => body;
  const header = (name: string) => {
    const value = req.headers[name.toLowerCase()];
    return value === undefined ? null : Array.isArray(value) ? value.join(", ") : value;
  };
  return {
    method: req.method,
    url: issuer + req.originalUrl,
    headers: { get: header, has: (name) => header(name) !== null },
    text: async () => (await readBody()).toString("utf8"),
    arrayBuffer: async () => {
      const bytes = await readBody();
      return bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength) as ArrayBuffer;
    },
  };
}

/** Serves the JSON endpoints straight from Express (the hot paths); screens go on to Remix. */
export function apiEndpoints(config: Config, handler: () => Promise<ApiHandler>) {
  return async (req: Request, res: Response, next: NextFunction) => {
    if (!isCorsPath(req.path)) return next();
    // Before any await: the body must be listened to in the tick the request arrived in.
    const request = nodeApiRequest(req, config.issuer);
    try {
      const pending = (await handler())(req.path, request);
      if (!pending) return next();
      const response = await pending;
      res.status(response.status);
      response.headers.forEach((value, name) => res.setHeader(name, value));
      res.end(response.body ? Buffer.from(await response.arrayBuffer()) : undefined);
    } catch (error) {
      next(error);
    }
  };
}

