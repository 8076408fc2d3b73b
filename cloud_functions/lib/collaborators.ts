/** The collaborators table as routing and presses read it (collaborators.ts writes it). */
import type { Doc } from "../_generated/dataModel";
import type { QueryCtx } from "../_generated/server";

/** Everyone listed, in the order they were pushed (the config's: routing lists their chats so). */
export async function collaboratorsOf(db: QueryCtx["db"]): Promise<Doc<"collaborators">[]> {
  return await db.query("collaborators").collect();
}
