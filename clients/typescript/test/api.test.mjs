// Calls a running API through the package as a client would install it:
// `go test -run TestTypeScriptClientPackage ./cmd/matchctl` packs the package
// with npm pack, installs the tarball into a fresh npm project and runs this
// file there against an API it started. By hand, against `make run`:
//
//   MATCHING_API_URL=http://localhost:8080 MATCHING_TOKEN=$TOKEN \
//   MATCHING_STUDENT=$STUDENT node --test test/api.test.mjs
//
// (from this folder, after npm run build). The student must be new: the test
// onboards it and expects no swipes yet.
import assert from "node:assert/strict";
import { randomUUID } from "node:crypto";
import { test } from "node:test";

import { APIError, createMatchingClient, unwrap } from "@collegematch/matching-client";

const { MATCHING_API_URL: baseUrl, MATCHING_TOKEN: token, MATCHING_STUDENT: student } = process.env;
const skip = baseUrl && token && student ? false : "set MATCHING_API_URL, MATCHING_TOKEN and MATCHING_STUDENT";

test("a new student's first run through the client", { skip }, async () => {
  const api = createMatchingClient({ baseUrl, token });

  const health = await unwrap(api.GET("/health"));
  assert.equal(health.status, "ok");
  assert.deepEqual(health.checks, { postgres: "ok", redis: "ok" });

  const onboarded = await unwrap(
    api.POST("/v2/onboarding/minimal", {
      body: { name: "Ada", email: "ada@example.com", graduation_year: "2027", gpa: 3.8, state: "CA" },
    }),
  );
  assert.equal(onboarded.student_id, student);

  const { categories } = await unwrap(api.GET("/v2/onboarding/category-schools"));
  assert.equal(categories.length, 6);
  await unwrap(
    api.POST("/v2/onboarding/category-swipe", {
      body: { student_id: student, category_id: categories[0].id, direction: "right" },
    }),
  );

  const page = await unwrap(api.POST("/v2/recommendations", { body: { student_id: student, limit: 5 } }));
  assert.equal(page.recommendations.length, 5);
  assert.equal(page.total_swipes, 0);
  const first = page.recommendations[0];
  assert.ok(first.match_score >= 0 && first.match_score <= 1, `match_score ${first.match_score}`);

  const swipe = await unwrap(
    api.POST("/swipe", { body: { student_id: student, school_id: first.school_id, direction: "right", swipe_id: randomUUID() } }),
  );
  assert.equal(swipe.success, true);
  assert.equal(swipe.swipe_count, 1);

  const detail = await unwrap(
    api.GET("/match/{student_id}/{school_id}", { params: { path: { student_id: student, school_id: first.school_id } } }),
  );
  assert.equal(detail.school_id, first.school_id);
  assert.equal(detail.student_id, student);
});

test("error answers become an APIError with code, details and request id", { skip }, async () => {
  const api = createMatchingClient({ baseUrl, token: () => token }); // a token function is called per request

  const other = randomUUID();
  await assert.rejects(unwrap(api.POST("/v2/recommendations", { body: { student_id: other } })), (err) => {
    assert.ok(err instanceof APIError);
    assert.equal(err.status, 403);
    assert.equal(err.code, "FORBIDDEN");
    assert.ok(err.requestId, "X-Request-ID is kept");
    return true;
  });

  await assert.rejects(unwrap(api.POST("/v2/recommendations", { body: { student_id: student, limit: 0 } })), (err) => {
    assert.ok(err instanceof APIError);
    assert.equal(err.status, 400);
    assert.equal(err.code, "INVALID_REQUEST");
    assert.ok(JSON.stringify(err.details).includes("limit"), JSON.stringify(err.details));
    return true;
  });

  const anonymous = createMatchingClient({ baseUrl });
  await assert.rejects(unwrap(anonymous.GET("/health")), (err) => {
    assert.ok(err instanceof APIError);
    assert.equal(err.status, 401);
    assert.equal(err.code, "UNAUTHORIZED");
    return true;
  });
});
