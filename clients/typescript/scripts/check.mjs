// `npm run check` (run by `make web-check`, so by CI): fails when
//
//   1. src/openapi.ts is not what openapi-typescript makes of
//      ../../api/openapi.yaml (else: npm run generate, or make clients);
//   2. the package's major version is not the major of the document's
//      info.version (the package follows the contract: a breaking change of
//      the API is a new major of both);
//   3. tsc --noEmit fails over src/.
import { execFileSync } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const root = join(dirname(fileURLToPath(import.meta.url)), "..");
const document = join(root, "../../api/openapi.yaml");
const run = (script, args) =>
  execFileSync(process.execPath, [join(root, "node_modules", script), ...args], {
    cwd: root,
    stdio: ["ignore", "ignore", "inherit"],
  });
const problems = [];

const tmp = await mkdtemp(join(tmpdir(), "client-check-"));
try {
  const fresh = join(tmp, "openapi.ts");
  run("openapi-typescript/bin/cli.js", [document, "--output", fresh, "--default-non-nullable", "false"]);
  const [want, have] = await Promise.all([readFile(fresh), readFile(join(root, "src/openapi.ts"))]);
  if (!want.equals(have)) {
    problems.push("src/openapi.ts is not what api/openapi.yaml generates: run make clients and commit it");
  }
} finally {
  await rm(tmp, { recursive: true, force: true });
}

const info = /^info:\n(?:[ \t].*\n|\n)*?[ \t]+version:[ \t]*["']?([^"'\s]+)/m.exec(await readFile(document, "utf8"));
const pkg = JSON.parse(await readFile(join(root, "package.json"), "utf8"));
const major = (v) => String(v ?? "").split(".")[0];
if (!info) {
  problems.push("api/openapi.yaml has no info.version");
} else if (major(info[1]) !== major(pkg.version)) {
  problems.push(
    `package.json's version ${pkg.version} is not of the API's major (info.version ${info[1]}): give the package major ${major(info[1])}`,
  );
}

try {
  run("typescript/bin/tsc", ["--noEmit", "--pretty", "false", "-p", "tsconfig.json"]);
} catch {
  problems.push("tsc --noEmit failed (above)");
}

if (problems.length > 0) {
  for (const p of problems) console.error(`clients/typescript check: ${p}`);
  process.exit(1);
}
console.log("clients/typescript check: src/openapi.ts is what api/openapi.yaml generates; the major follows info.version; tsc passed");
