package simulate

import (
	"math/rand/v2"

	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// Population is the synthetic students of a Config drawn over a given
// catalogue, to drive a running service with (internal/tools/simulate/live):
// each student has the profile it onboards with and decides its swipes
// from its hidden utility, exactly as in Run. Archetypes are not used.
type Population struct {
	w *world
}

// NewPopulation draws cfg's students over schools: the catalogue the
// service serves, so their hidden utilities are over the same schools.
func NewPopulation(cfg Config, schools []domain.School) *Population {
	cfg.Archetypes = nil
	cfg = cfg.withDefaults()
	cfg.Schools = len(schools)
	return &Population{w: newWorld(cfg, match.NewCatalog(schools))}
}

// Student returns student i (0 <= i < Config.Students). It is not safe
// for concurrent use; distinct students are.
func (p *Population) Student(i int) *Student {
	return &Student{w: p.w, st: p.w.newStudent(i), r: p.w.rng(i, 20)}
}

// Student is one synthetic student of a Population.
type Student struct {
	w  *world
	st *student
	r  *rand.Rand
}

// Profile is the profile the student onboards with: academics, home,
// state, distance, budget, income, majors and sometimes a preferred size.
// Its ID, name, e-mail and graduation year are left to the caller.
func (s *Student) Profile() domain.Student { return s.st.seen }

// Decide draws the student's swipe on a school, as Run draws it
// (sigmoid((U - tau) / T)); known is false for a school the population's
// catalogue does not hold.
func (s *Student) Decide(schoolID string) (like, known bool) {
	idx, ok := s.w.cat.Index(schoolID)
	if !ok {
		return false, false
	}
	return s.st.likes(idx, s.r, s.w.cfg.LikeTemperature), true
}

// Reason is the feedback reason the student gives about a school it
// swiped when asked: perfect_match for a like; for a dislike, what its
// hidden weights score worst of the school: the price (too_expensive),
// the campus and its distance (wrong_location) or the academics
// (not_my_major when none of its intended majors is taught there, else
// too_selective).
func (s *Student) Reason(schoolID string, liked bool) string {
	idx, ok := s.w.cat.Index(schoolID)
	if liked || !ok {
		return match.ReasonPerfectMatch
	}
	sc := match.Score(s.st.profile, s.st.hidden, s.w.cat, idx)
	switch {
	case sc.Financial <= sc.Campus && sc.Financial <= sc.Academic:
		return match.ReasonTooExpensive
	case sc.Campus <= sc.Academic:
		return match.ReasonWrongLocation
	case len(s.st.profile.Majors) > 0 && len(match.MatchedMajors(s.st.profile, s.w.cat, idx)) == 0:
		return match.ReasonNotMyMajor
	}
	return match.ReasonTooSelective
}
