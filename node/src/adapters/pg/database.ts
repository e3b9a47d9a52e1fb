import pg from "pg";
import { createDatabase, DATABASE_EXISTS } from "./sql/database.js";

/**
 * Creates the database named in the URL if it does not exist (a local
 * convenience of `chronofence migrate`). Connects to the `postgres`
 * maintenance database of the same server to do it. True if it created one.
 */
export async function ensureDatabase(databaseUrl: string): Promise<boolean> {
  const url = new URL(databaseUrl);
  const name = decodeURIComponent(url.pathname.slice(1));
  if (name === "") return false;
  url.pathname = "/postgres";
  const client = new pg.Client({ connectionString: url.toString() });
  await client.connect();
  try {
    const exists = await client.query(DATABASE_EXISTS, [name]);
    if (exists.rowCount !== 0) return false;
    await client.query(createDatabase(name)).catch((error: { code?: string }) => {
      if (error.code !== "42P04") throw error; // created concurrently: fine
    });
    return true;
  } finally {
    await client.end();
  }
}
