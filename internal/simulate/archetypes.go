package simulate

import "github.com/collegematch/matching/internal/match"

// IllustrativeArchetypes are six category priors for trying the cold start
// in the simulation, shaped like the onboarding categories (a selective
// research university, a small liberal-arts college, a large public
// flagship, an affordable regional public university, a technical school,
// a college close to home). They are the simulation's stand-ins: the
// service's categories, and the weights a category swipe sets, come with
// onboarding; pass those in Config.Archetypes to measure them.
func IllustrativeArchetypes() []Archetype {
	return []Archetype{
		{"selective research university", match.Weights{
			CostWeight: 0.3, DistanceWeight: 0.25, OutcomesWeight: 0.85, CampusWeight: 0.4,
			ProgramWeight: 0.6, AidWeight: 0.4, AcademicSelectivity: 0.8, SizePreference: 0.7}},
		{"small liberal-arts college", match.Weights{
			CostWeight: 0.4, DistanceWeight: 0.35, OutcomesWeight: 0.6, CampusWeight: 0.85,
			ProgramWeight: 0.35, AidWeight: 0.55, AcademicSelectivity: 0.6, SizePreference: 0.15}},
		{"large public flagship", match.Weights{
			CostWeight: 0.6, DistanceWeight: 0.6, OutcomesWeight: 0.6, CampusWeight: 0.6,
			ProgramWeight: 0.5, AidWeight: 0.4, AcademicSelectivity: 0.55, SizePreference: 0.92}},
		{"affordable regional university", match.Weights{
			CostWeight: 0.9, DistanceWeight: 0.75, OutcomesWeight: 0.4, CampusWeight: 0.3,
			ProgramWeight: 0.5, AidWeight: 0.8, AcademicSelectivity: 0.35, SizePreference: 0.55}},
		{"technical and engineering school", match.Weights{
			CostWeight: 0.45, DistanceWeight: 0.35, OutcomesWeight: 0.8, CampusWeight: 0.3,
			ProgramWeight: 0.9, AidWeight: 0.4, AcademicSelectivity: 0.65, SizePreference: 0.45}},
		{"college close to home", match.Weights{
			CostWeight: 0.8, DistanceWeight: 0.95, OutcomesWeight: 0.4, CampusWeight: 0.35,
			ProgramWeight: 0.45, AidWeight: 0.6, AcademicSelectivity: 0.4, SizePreference: 0.5}},
	}
}
