/**
 * The part of node:zlib that archiveNode.ts ("use node") uses: the project carries no @types/node. More
 * than one dot in the name: convex deploy and the module glob leave it out.
 */
declare module "node:zlib" {
  export function gzipSync(data: Uint8Array, options?: { level?: number }): Uint8Array;
  export function gunzipSync(data: Uint8Array): Uint8Array;
}
