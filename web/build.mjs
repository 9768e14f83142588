// Builds the demo and docs pages into ../internal/demo/dist (or the folder
// given as the first argument), which the Go binary embeds: esbuild bundles
// src/demo.ts and src/docs.ts with the generated client; the HTML, the CSS
// and Swagger UI's own prebuilt bundle are copied as they are. The output
// depends only on the sources and the locked packages, so `make web-check`
// can rebuild it and compare. The API client is the package in
// ../clients/typescript (a file: dependency), bundled from its TypeScript
// source through its "collegematch-source" export condition, so the page
// needs no build of the package first.
import { build } from "esbuild";
import { copyFile, mkdir, rm } from "node:fs/promises";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const out = process.argv[2] ?? join(here, "../internal/demo/dist");

await rm(out, { recursive: true, force: true });
await build({
  absWorkingDir: here,
  entryPoints: { "assets/demo": "src/demo.ts", "docs/docs": "src/docs.ts" },
  outdir: out,
  bundle: true,
  conditions: ["collegematch-source"],
  format: "esm",
  target: "es2022",
  charset: "utf8",
  legalComments: "eof",
  logLevel: "warning",
});

const swagger = "node_modules/swagger-ui-dist";
const copies = [
  ["index.html", "index.html"],
  ["demo.css", "assets/demo.css"],
  ["docs.html", "docs/index.html"],
  ["docs.css", "docs/docs.css"],
  [join(swagger, "swagger-ui-bundle.js"), "docs/swagger-ui-bundle.js"],
  [join(swagger, "swagger-ui.css"), "docs/swagger-ui.css"],
  [join(swagger, "LICENSE"), "docs/swagger-ui.LICENSE"],
  [join(swagger, "NOTICE"), "docs/swagger-ui.NOTICE"],
];
for (const [from, to] of copies) {
  await mkdir(dirname(join(out, to)), { recursive: true });
  await copyFile(join(here, from), join(out, to));
}
