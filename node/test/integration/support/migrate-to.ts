/** Migrates a test database to a given migration only, to test what a later one does to existing rows. */
import { copyFile, mkdtemp, rm } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import {
  defaultMigrationsDirectory,
  listMigrations,
  migrate,
} from "../../../src/adapters/pg/migrate.js";

/** Applies migrations 000001 up to `lastId` (inclusive) and no further. */
export async function migrateTo(databaseUrl: string, lastId: number): Promise<void> {
  const source = await defaultMigrationsDirectory();
  const dir = await mkdtemp(path.join(os.tmpdir(), "cf-migrate-to-"));
  try {
    for (const file of await listMigrations(source)) {
      if (file.id <= lastId) await copyFile(file.file, path.join(dir, path.basename(file.file)));
    }
    await migrate(databaseUrl, dir);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
}
