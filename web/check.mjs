// `make web-check` (after the client package's own check): fails when the
// committed built pages differ from what their sources make now, or when the
// pages do not type-check against the client package.
//
//   1. ../internal/demo/dist == build.mjs of the sources (else: make web);
//   2. tsc --noEmit over src/ (the pages against the client package's source,
//      ../clients/typescript/src, whose types are generated from
//      ../api/openapi.yaml).
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join, relative } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const bin = (name) => join(here, "node_modules/.bin", name);
const run = (cmd, args) => execFileSync(cmd, args, { cwd: here, stdio: ["ignore", "ignore", "inherit"] });
const problems = [];

async function files(dir) {
  const out = new Map();
  for (const e of await readdir(dir, { recursive: true, withFileTypes: true })) {
    if (e.isFile()) {
      const path = join(e.parentPath, e.name);
      out.set(relative(dir, path), await readFile(path));
    }
  }
  return out;
}

const tmp = await mkdtemp(join(tmpdir(), "web-check-"));
try {
  const built = join(tmp, "dist");
  run(process.execPath, ["build.mjs", built]);
  const [want, have] = await Promise.all([files(built), files(join(here, "../internal/demo/dist"))]);
  for (const [name, body] of want) {
    if (!have.has(name)) {
      problems.push(`internal/demo/dist/${name} is missing: run make web and commit it`);
    } else if (!have.get(name).equals(body)) {
      problems.push(`internal/demo/dist/${name} is not what web/ builds: run make web and commit it`);
    }
  }
  for (const name of have.keys()) {
    if (!want.has(name)) {
      problems.push(`internal/demo/dist/${name} is not built from web/ any more: run make web and commit the removal`);
    }
  }
} finally {
  await rm(tmp, { recursive: true, force: true });
}

try {
  run(bin("tsc"), ["--noEmit", "--pretty", "false"]);
} catch {
  problems.push("tsc --noEmit failed (above): the pages do not type-check against the client package");
}

if (problems.length > 0) {
  for (const p of problems) console.error(`web-check: ${p}`);
  process.exit(1);
}
console.log("web-check: the built pages match their sources; tsc --noEmit passed");
