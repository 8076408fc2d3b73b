/**
 * Agents write arbitrary JSON objects as metadata. Convex refuses, in stored documents and on the
 * wire alike, object keys that start with "$" or hold characters outside printable ASCII (see
 * metadata.test.ts for the exact errors), and JSON numbers beyond 2^53 lose digits as float64. So
 * the table keeps metadata as JSON text (`metadataJson`) and this module converts at the edges:
 * a site may push `metadata` (an object) or `metadataJson` (text, lossless), and readers get
 * `metadata` as an object, or `metadata: null` plus `metadataJson` when the object cannot travel
 * exactly (`wireSafe`).
 */

type Parsed = { text: string } | { reason: string };

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return typeof value === "object" && value !== null && !Array.isArray(value);
}

/** The JSON text to store for one pushed episode, or why the row is refused. */
export function metadataText(fields: { metadata?: unknown; metadataJson?: string }): Parsed {
  const { metadata, metadataJson } = fields;
  if (metadata !== undefined && metadataJson !== undefined) {
    return { reason: "fields carry both metadata and metadataJson; send one" };
  }
  if (metadataJson !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(metadataJson);
    } catch (error) {
      return { reason: `metadataJson is not JSON (${(error as Error).message})` };
    }
    return isPlainObject(parsed) ? { text: metadataJson } : { reason: "metadataJson is not a JSON object" };
  }
  if (metadata === undefined) return { reason: "fields carry neither metadata nor metadataJson" };
  return isPlainObject(metadata) ? { text: JSON.stringify(metadata) } : { reason: "metadata is not an object" };
}

const MAX_FIELD_NAME = 1024; // Convex's limit on a field name's length

/**
 * Whether Convex can carry this value as an object, exactly: the key rules of convex/values, and
 * no integral number beyond 2^53 (JSON.parse read it as a float64, which may have lost its digits:
 * the text keeps them). sync/archive/lines.py's carried decides alike for the archive's lines.
 */
export function wireSafe(value: unknown): boolean {
  if (typeof value === "number") return !Number.isInteger(value) || Number.isSafeInteger(value);
  if (Array.isArray(value)) return value.every(wireSafe);
  if (!isPlainObject(value)) return true;
  return Object.entries(value).every(
    ([key, inner]) =>
      !key.startsWith("$") && key.length <= MAX_FIELD_NAME && /^[\x20-\x7e]*$/.test(key) && wireSafe(inner),
  );
}

/** The metadata fields of an episode as clients read it. */
export function metadataOut(text: string): { metadata: unknown; metadataJson?: string } {
  const parsed: unknown = JSON.parse(text);
  return wireSafe(parsed) ? { metadata: parsed } : { metadata: null, metadataJson: text };
}
