package simulate

import (
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// FamilyPopulation is the students of a families run (FamiliesConfig) over
// a catalogue, to drive a running service with
// (internal/tools/simulate/live): each has the profile it onboards with and
// its hidden taste, decides its swipes as in RunFamilies, and keeps what it
// swiped, so that a list the service serves can be judged (NDCG@20 over
// the schools not swiped yet) beside the ideal list and the textbook
// learner served under the same rules after the same swipes.
type FamilyPopulation struct{ w *famWorld }

// NewFamilyPopulation draws cfg's students over cfg.Schools: the
// catalogue the service serves.
func NewFamilyPopulation(cfg FamiliesConfig) *FamilyPopulation {
	return &FamilyPopulation{w: newFamWorld(cfg.withDefaults())}
}

// Student returns student i (family i mod NumFamilies); it may be called
// from several goroutines. A FamilyStudent is not safe for concurrent use;
// distinct students are.
func (p *FamilyPopulation) Student(i int) *FamilyStudent {
	st := p.w.newStudent(i) // its decisions drawn from its own stream, as RunFamilies draws them
	return &FamilyStudent{w: p.w, st: st, p: &path{excluded: make([]bool, p.w.n), ideal: st.ideal}}
}

// FamilyStudent is one student of a FamilyPopulation.
type FamilyStudent struct {
	w  *famWorld
	st *famStudent
	p  *path

	// What References reads, made at its first call.
	byIndex  []match.Scored
	ceiling  []match.Scored
	features [][match.ResidualFeatureCount]float64
}

// Family is the student's family of tastes.
func (s *FamilyStudent) Family() Family { return s.st.family }

// Profile is the profile the student onboards with. Its ID, name, e-mail
// and graduation year are left to the caller.
func (s *FamilyStudent) Profile() domain.Student {
	p := s.st.seen
	p.ID = ""
	return p
}

// Swipe draws the student's swipe on a school it was served and records
// it (the school is then swiped: out of the lists NDCG judges); known is
// false for a school the population's catalogue does not hold.
func (s *FamilyStudent) Swipe(schoolID string) (like, known bool) {
	idx, ok := s.w.cat.Index(schoolID)
	if !ok {
		return false, false
	}
	like = s.st.decide(idx)
	if !s.p.excluded[idx] {
		s.p.excluded[idx] = true
		s.p.ideal.remove(s.st.gain[idx])
	}
	s.p.swiped = append(s.p.swiped, idx)
	s.p.ys = append(s.p.ys, like)
	return like, true
}

// Swipes is how many swipes the student has made.
func (s *FamilyStudent) Swipes() int { return len(s.p.swiped) }

// NDCG is the NDCG@20 of a list of schools (the first 20 a service
// recommends) over the schools the student has not swiped: a swiped or
// unknown school in the list gains nothing.
func (s *FamilyStudent) NDCG(schoolIDs []string) float64 {
	dcg := 0.0
	for k, id := range schoolIDs[:min(len(schoolIDs), ndcgK)] {
		if idx, ok := s.w.cat.Index(id); ok && !s.p.excluded[idx] {
			dcg += s.st.gain[idx] * discount[k]
		}
	}
	return s.p.ideal.ndcg(dcg)
}

// References are the NDCG@20 of the student's ideal order and of the
// textbook learner (an L2-regularised logistic regression over the
// residual's school features, fitted on the student's swipes so far), each
// served under the feed rules after the swipes made, as RunFamilies
// measures them: the ceiling and the floor a learner is held to.
func (s *FamilyStudent) References() (ceiling, logistic float64) {
	w, st, p := s.w, s.st, s.p
	if s.byIndex == nil {
		s.byIndex = make([]match.Scored, w.n)
		for _, sc := range match.Rank(nil, st.profile, st.prior, w.cat) {
			s.byIndex[sc.Index] = sc
		}
		s.ceiling = w.order(s.byIndex, st.util)
		s.features = match.ResidualFeatures(nil, st.profile, w.cat)
	}
	prior := match.NewModel(st.prior)
	t := len(p.swiped)
	ceiling = st.ndcgOfFeed(w.serve(st, p, t, prior, s.ceiling), &p.ideal)
	logistic = st.ndcgOfFeed(w.serve(st, p, t, prior, w.order(s.byIndex, fitLogistic(s.features, p.swiped, p.ys))), &p.ideal)
	return ceiling, logistic
}
