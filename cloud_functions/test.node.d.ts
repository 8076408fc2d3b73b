/**
 * The few Node APIs the tests use (the fake Bot API's server, the shared case table, the
 * environment), declared here: the project carries no @types/node, and the deployed functions
 * must not lean on Node's types anyway (Convex runs them in its own runtime). Three dots in the
 * name: convex deploy and the module glob leave it out.
 */
declare var process: { env: Record<string, string | undefined> };

declare module "node:fs" {
  export function readFileSync(path: URL | string, encoding: "utf8"): string;
  export function readFileSync(path: URL | string): Uint8Array;
}

declare module "node:net" {
  export type AddressInfo = { address: string; family: string; port: number };
}

declare module "node:http" {
  import type { AddressInfo } from "node:net";
  export interface IncomingMessage {
    url?: string;
    on(event: "data", listener: (chunk: Uint8Array) => void): this;
    on(event: "end", listener: () => void): this;
  }
  export interface ServerResponse {
    writeHead(status: number, headers?: Record<string, string>): this;
    end(body?: string): void;
  }
  export interface Server {
    listen(port: number, host: string, callback: () => void): this;
    address(): AddressInfo | string | null;
    close(callback?: (error?: Error) => void): this;
    closeAllConnections(): void;
  }
  export function createServer(handler: (req: IncomingMessage, res: ServerResponse) => void): Server;
  const http: { createServer: typeof createServer };
  export default http;
}
