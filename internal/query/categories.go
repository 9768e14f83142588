package query

import (
	"context"
	"sync"

	"github.com/collegematch/matching/internal/active"
	"github.com/collegematch/matching/internal/domain"
	"github.com/collegematch/matching/internal/match"
)

// CategoryList is the answer of GET /v2/onboarding/category-schools: the
// six onboarding categories in display order.
type CategoryList struct {
	Categories []CategoryView `json:"categories"`
}

// CategoryView is one category with its example school, null when the
// catalogue has no member of the category.
type CategoryView struct {
	ID            string             `json:"id"`
	Name          string             `json:"name"`
	Description   string             `json:"description"`
	ExampleSchool *ExampleSchoolView `json:"example_school"`
}

// ExampleSchoolView is a category's example school.
type ExampleSchoolView struct {
	ID       string `json:"id"`
	Name     string `json:"name"`
	City     string `json:"city"`
	State    string `json:"state"`
	ImageURL string `json:"image_url"`
}

// categoriesMemo is the category list of one loaded catalogue, computed
// once on first use.
type categoriesMemo struct {
	cat  *active.Catalog
	once sync.Once
	list CategoryList
}

// Categories is the category list of the catalogue now held. It is
// computed once per loaded catalogue (match.Categories reads every school,
// about 10 ms for 6,500) and shared by every request until the catalogue
// changes. The result must not be modified.
func (s *Service) Categories() CategoryList {
	cat := s.catalogs.Current()
	m := s.categories.Load()
	if m == nil || m.cat != cat {
		fresh := &categoriesMemo{cat: cat}
		if s.categories.CompareAndSwap(m, fresh) {
			m = fresh
		} else if m = s.categories.Load(); m == nil || m.cat != cat {
			m = fresh // another catalogue was swapped in meanwhile: answer for this one
		}
	}
	m.once.Do(func() { m.list = categoryList(match.Categories(cat.Catalog, s.images)) })
	return m.list
}

func categoryList(cs []match.Category) CategoryList {
	out := CategoryList{Categories: make([]CategoryView, len(cs))}
	for i, c := range cs {
		v := CategoryView{ID: string(c.ID), Name: c.Name, Description: c.Description}
		if e := c.Example; e != nil {
			v.ExampleSchool = &ExampleSchoolView{ID: e.ID, Name: e.Name, City: e.City, State: e.State, ImageURL: e.ImageURL}
		}
		out.Categories[i] = v
	}
	return out
}

// CategoryPrior is the student's prior preference weights now, rounded for
// display: the profile's seed weights moved by the student's category
// swipes (match.CategoryStart), the weights scoring starts from before the
// student swipes any school. An unknown or erased student is
// INVALID_STUDENT_ID.
func (s *Service) CategoryPrior(ctx context.Context, studentID string) (map[string]float64, error) {
	st, err := s.students.LearnerState(ctx, studentID)
	if err != nil {
		return nil, err
	}
	if st.Student.DeletedAt != nil {
		return nil, domain.StudentNotFound(studentID)
	}
	_, _, prior := match.Start(st)
	return roundWeights(prior.Sanitize().Map()), nil
}
