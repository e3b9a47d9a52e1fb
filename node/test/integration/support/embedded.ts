/**
 * The embedded backend for integration tests: a PGlite database of the test
 * file's own (a copy of a migrated template, so that only the first test
 * file of a run pays for initdb and the migrations) in a temporary
 * directory, and the in-process hot tier. The template is keyed by the
 * migrations and the PGlite version, so a new migration makes a new one.
 */
import { createHash, randomBytes } from "node:crypto";
import { cpSync, existsSync, readdirSync, readFileSync, renameSync, rmSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createRequire } from "node:module";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { MemoryHotTier } from "../../../src/adapters/memory/memory-hot-tier.js";
import { MemoryTransport } from "../../../src/adapters/memory/memory-transport.js";
import { defaultMigrationsDirectory } from "../../../src/adapters/pg/migrate.js";
import {
  type EmbeddedPostgres,
  openEmbeddedPostgres,
} from "../../../src/adapters/pglite/embedded-postgres.js";
import { inProcessHotTiers } from "../../../src/main/dev.js";
import type { RoleInfrastructure } from "../../../src/main/role-connections.js";

export interface EmbeddedBackend {
  dir: string;
  postgres: EmbeddedPostgres;
  hotTier: MemoryHotTier;
  infra: RoleInfrastructure;
  close(): Promise<void>;
}

async function template(): Promise<string> {
  const migrations = await defaultMigrationsDirectory();
  const hash = createHash("sha256");
  for (const file of readdirSync(migrations).sort()) {
    hash.update(file).update(readFileSync(join(migrations, file)));
  }
  const pgliteEntry = createRequire(import.meta.url).resolve("@electric-sql/pglite");
  hash.update(readFileSync(join(dirname(pgliteEntry), "..", "package.json")));
  const dir = join(tmpdir(), `chronofence-pglite-template-${hash.digest("hex").slice(0, 16)}`);
  if (existsSync(dir)) return dir;
  // Built aside and renamed into place: test files starting together never see half a template.
  const building = `${dir}.${randomBytes(4).toString("hex")}`;
  const postgres = await openEmbeddedPostgres(building, () => undefined);
  try {
    await postgres.migrate(migrations);
  } finally {
    await postgres.close();
  }
  try {
    renameSync(building, dir);
  } catch {
    rmSync(building, { recursive: true, force: true }); // another file renamed its own first
  }
  return dir;
}

export async function openEmbeddedBackend(): Promise<EmbeddedBackend> {
  const dir = await mkdtemp(join(tmpdir(), "chronofence-test-embedded-"));
  cpSync(await template(), join(dir, "pgdata"), { recursive: true });
  const postgres = await openEmbeddedPostgres(join(dir, "pgdata"), () => undefined);
  const hotTier = new MemoryHotTier();
  return {
    dir,
    postgres,
    hotTier,
    infra: {
      postgres: { pool: (options) => postgres.pool(options.role) },
      hotTiers: inProcessHotTiers(hotTier),
      transport: new MemoryTransport(),
    },
    async close() {
      await postgres.close();
      await rm(dir, { recursive: true, force: true });
    },
  };
}
