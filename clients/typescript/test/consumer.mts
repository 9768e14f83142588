// Type-checked as a consumer's code against the installed tarball (by
// TestTypeScriptClientPackage in cmd/matchctl): the shipped declarations
// resolve, and the document's paths, bodies and answers are what they type.
import {
  APIError,
  createMatchingClient,
  unwrap,
  type MatchingClient,
  type Schemas,
} from "@collegematch/matching-client";

const api: MatchingClient = createMatchingClient({ baseUrl: "http://localhost:8080", token: async () => "a JWT" });

export async function topSchool(student: string): Promise<Schemas["RecommendationItem"] | undefined> {
  const page = await unwrap(api.POST("/v2/recommendations", { body: { student_id: student, limit: 5 } }));
  const phase: Schemas["LearningPhase"] = page.metadata.learning_phase;
  const score: number | undefined = page.recommendations[0]?.match_score;
  void phase;
  void score;
  return page.recommendations[0];
}

export async function retryAfter(student: string): Promise<number | null> {
  try {
    await unwrap(api.POST("/swipe", { body: { student_id: student, school_id: student, direction: "left" } }));
    return null;
  } catch (err) {
    return err instanceof APIError ? err.retryAfter : null;
  }
}

export async function notInTheDocument(student: string): Promise<void> {
  // @ts-expect-error: the document has no such path
  await api.GET("/v1/recommendations");
  // @ts-expect-error: limit is an integer
  await api.POST("/v2/recommendations", { body: { student_id: student, limit: "5" } });
  // @ts-expect-error: student_id is required
  await api.POST("/v2/recommendations", { body: { limit: 5 } });
  // @ts-expect-error: a direction is left or right
  await api.POST("/swipe", { body: { student_id: student, school_id: student, direction: "up" } });
  const page = await unwrap(api.POST("/v2/recommendations", { body: { student_id: student } }));
  // @ts-expect-error: the answer has no such field
  void page.recommendations[0]?.score;
}
