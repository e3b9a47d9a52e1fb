/**
 * The migration runner. Migrations are numbered SQL files (`000001_name.sql`)
 * in `migrations/`, append-only: a file, once released, never changes.
 *
 * Each pending file is applied in its own transaction which first takes a
 * transaction-scoped advisory lock, then checks the ledger, then writes its
 * ledger row *before* running the file (as graphile-worker does). Two
 * migrators started together therefore serialise on the lock, and the second
 * finds the ledger row and skips the file; a failed file rolls back with its
 * ledger row, so it is retried next time. Safe to run any number of times.
 */
import { readdir, readFile } from "node:fs/promises";
import path from "node:path";
import pg from "pg";
import {
  CREATE_LEDGER,
  INSERT_LEDGER_ROW,
  LEDGER_HAS,
  LOCK_MIGRATIONS,
} from "./sql/migration-ledger.js";
import { BEGIN, COMMIT, ROLLBACK } from "./sql/transactions.js";

const LOCK_KEY = "chronofence.migrate";
const FILE_PATTERN = /^(\d{6})_([a-z0-9_]+)\.sql$/;

export interface MigrationFile {
  id: number;
  name: string;
  file: string;
}

export interface MigrateResult {
  applied: string[];
  skipped: string[];
}

export async function listMigrations(directory: string): Promise<MigrationFile[]> {
  const entries = await readdir(directory);
  const files: MigrationFile[] = [];
  for (const entry of entries) {
    const match = FILE_PATTERN.exec(entry);
    if (match)
      files.push({ id: Number(match[1]), name: match[2]!, file: path.join(directory, entry) });
  }
  files.sort((a, b) => a.id - b.id);
  // Numbers are handed out ahead to work done in parallel, so a number may be
  // missing for a while (or for good); one number twice is always a mistake.
  files.forEach((migration, index) => {
    if (index > 0 && migration.id === files[index - 1]!.id) {
      throw new Error(`two migrations are numbered ${migration.id}`);
    }
  });
  return files;
}

/** Applies every migration not yet in the ledger, in order, one transaction each. */
export async function migrate(connectionString: string, directory: string): Promise<MigrateResult> {
  const client = new pg.Client({ connectionString, application_name: "chronofence-migrate" });
  await client.connect();
  try {
    return await migrateWith(client, directory);
  } finally {
    await client.end();
  }
}

/** The same, on a connection the caller holds (the embedded Postgres has no connection string). */
export async function migrateWith(
  client: Pick<pg.ClientBase, "query">,
  directory: string,
): Promise<MigrateResult> {
  const migrations = await listMigrations(directory);
  const result: MigrateResult = { applied: [], skipped: [] };
  for (const migration of migrations) {
    const label = `${String(migration.id).padStart(6, "0")}_${migration.name}`;
    const applied = await applyOne(client, migration);
    (applied ? result.applied : result.skipped).push(label);
  }
  return result;
}

async function applyOne(
  client: Pick<pg.ClientBase, "query">,
  migration: MigrationFile,
): Promise<boolean> {
  const sql = await readFile(migration.file, "utf8");
  await client.query(BEGIN);
  try {
    await client.query(LOCK_MIGRATIONS, [LOCK_KEY]);
    await client.query(CREATE_LEDGER);
    const done = await client.query(LEDGER_HAS, [migration.id]);
    if (done.rowCount !== 0) {
      await client.query(COMMIT);
      return false;
    }
    await client.query(INSERT_LEDGER_ROW, [migration.id, migration.name]);
    await client.query(sql);
    await client.query(COMMIT);
    return true;
  } catch (error) {
    await client.query(ROLLBACK).catch(() => undefined);
    throw new Error(
      `migration ${migration.id}_${migration.name} failed: ${(error as Error).message}`,
      {
        cause: error,
      },
    );
  }
}

/** The repository's `migrations/` directory, from source (tests) or from dist/. */
export async function defaultMigrationsDirectory(
  fromUrl: string = import.meta.url,
): Promise<string> {
  let dir = path.dirname(new URL(fromUrl).pathname);
  for (let depth = 0; depth < 8; depth++) {
    const candidate = path.join(dir, "migrations");
    try {
      await readdir(candidate);
      const pkg = await readFile(path.join(dir, "package.json"), "utf8").catch(() => "");
      if (pkg.includes('"chronofence"')) return candidate;
    } catch {
      // not here; keep walking up
    }
    dir = path.dirname(dir);
  }
  throw new Error("cannot find the migrations/ directory; pass it explicitly");
}
