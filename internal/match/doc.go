// Package match is the pure scoring core: it scores, grades, bands and
// explains schools for a student, and ranks the whole catalogue. It does no
// I/O and reads no clock or global random source; the same inputs always
// give the same outputs. It depends on internal/domain and the standard
// library only.
//
// # Inputs
//
//   - Catalog: the schools, checked and precomputed once (NewCatalog).
//   - Profile: the scoring view of a student (NewProfile).
//   - Weights: the student's preference weights (DefaultWeights,
//     SeedWeights, WeightsFromMap), the learner's output.
//
// # Scores
//
// match_score is a weighted mean of four families, each a weighted mean of
// three factors, every value in [0,1]:
//
//	academic   sat_match, selectivity_fit, program_strength
//	financial  affordability, aid_availability, value_score
//	campus     size_fit, location_fit, setting_fit
//	outcomes   graduation_rate, employment, earnings
//
// Family weights come from the preference weights (FamilyWeightsFor):
// academic from program_weight plus the largest base, financial from
// cost_weight and aid_weight, campus from distance_weight and
// campus_weight, outcomes from outcomes_weight; they are normalised to sum
// to 1. Inside a family the same importances tilt the factors:
// program_strength counts 0.1+0.6*program_weight against sat_match 0.4 and
// selectivity_fit 0.3; affordability 0.2+0.8*cost_weight, aid_availability
// 0.1+0.5*aid_weight, value_score 0.3; location_fit 0.2+0.8*distance_weight,
// size_fit and setting_fit 0.1+0.5*campus_weight each; outcomes 0.4 / 0.3 /
// 0.3. A factor the student has no preference on (no intended majors, no
// preferred setting) is reported as Neutral (0.5) and carries no weight.
// academic_selectivity moves the selectivity level selectivity_fit aims at;
// size_preference is the size size_fit aims at. The curves of each factor
// are documented on the function that computes it (factors.go).
//
// The data has no employment rate: employment is a proxy, the estimated
// share of former students who out-earn a typical high-school graduate
// ($30,000) six years after entry, from the 6-year median earnings (see
// outcomesOf).
//
// A profile's stated preferences seed the weights (SeedWeights:
// preferred_size sets size_preference, a stated budget raises cost_weight);
// after that scoring reads the weights, so what the learner makes of the
// student's swipes wins where the two overlap.
//
// # Missing data
//
// A factor whose data is missing, on the school's side or the student's,
// takes Neutral (0.5) and lowers Confidence: the share of the score, by
// weight, that rests on real data. A proxy counts half (published tuition
// for net price, a state's centre for a location, a GPA for a test score,
// 6-year for 10-year earnings, retention for graduation); the average net
// price counts 0.8 and an unstated budget 0.75. Non-finite or out-of-range
// inputs count as missing. No input produces a NaN, a value outside [0,1]
// or a panic (FuzzScore). Detail flags estimates in words when Confidence
// is under 0.6, and adds "Limited data" to the reasons under 0.4.
//
// # Grades, bands, prices, words
//
// Grade and Percent round score*100 (see Grade); AdmissionBand is a
// reach/target/safety band (see its table); EstimateNetPrice names the
// source of its figure; Reasons and Explanation put the factors into words
// a student can check against the data.
//
// # Ranking
//
// Rank scores the whole catalogue into a caller-owned slice and orders it
// by score, ties by school ID, in time linear in the catalogue size and
// without allocating once the slice is big enough. Detail computes
// everything for one school, with the same numbers Rank gives it.
package match

// AlgorithmVersion is the semantic version of scoring; it changes whenever
// a change here changes scores (1.1.0: feeds ranked by the learned model,
// with probes, exploration and the geographic mix; 1.1.1: the factors the
// weights do not move kept as Factors keep them, in steps of 1/32768 and
// the distance at float32 precision; 1.2.0: the order served follows the
// learner's residual as well as the weights, see learn_residual.go; 1.3.0: from
// 15 swipes the residual learns how much the weights' score counts, see
// learn_refit.go; 1.4.0: gamma's prior in that fit tightened to N(0.25,
// 0.15), see fitVarFreeScore), and
// recommendation metadata carries it. A feed stored under another version is built again
// before it is served.
const AlgorithmVersion = "1.4.0"
