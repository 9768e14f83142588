package domain

// Field is one field of a partial update: absent (Set false) keeps the
// stored value, Set with Null clears it, Set with a value replaces it.
type Field[T any] struct {
	Set   bool
	Null  bool
	Value T
}

// Val returns a set, non-null field.
func Val[T any](v T) Field[T] { return Field[T]{Set: true, Value: v} }

func (f Field[T]) applyPtr(dst **T) {
	switch {
	case !f.Set:
	case f.Null:
		*dst = nil
	default:
		v := f.Value
		*dst = &v
	}
}

func (f Field[T]) apply(dst *T) {
	switch {
	case !f.Set:
	case f.Null:
		var zero T
		*dst = zero
	default:
		*dst = f.Value
	}
}

// Point is a latitude/longitude pair.
type Point struct {
	Lat float64 `json:"lat"`
	Lon float64 `json:"lon"`
}

// ProfilePatch is what a student sends to onboarding: every field optional,
// already validated by the API.
type ProfilePatch struct {
	Name             Field[string]
	Email            Field[string]
	GraduationYear   Field[string]
	GPA              Field[float64]
	SAT              Field[int]
	ACT              Field[int]
	Home             Field[Point]
	State            Field[string]
	Zip              Field[string]
	MaxDistanceMiles Field[int]
	Budget           Field[int]
	FamilyIncome     Field[int]
	IntendedMajors   Field[[]Major]
	PreferredSize    Field[string]
	PreferredSetting Field[string]
}

// Apply returns s with the patch applied; s is not modified.
func (p ProfilePatch) Apply(s Student) Student {
	p.Name.apply(&s.Name)
	p.Email.apply(&s.Email)
	p.GraduationYear.apply(&s.GraduationYear)
	p.GPA.applyPtr(&s.GPA)
	p.SAT.applyPtr(&s.SAT)
	p.ACT.applyPtr(&s.ACT)
	if p.Home.Set {
		if p.Home.Null {
			s.HomeLat, s.HomeLon = nil, nil
		} else {
			lat, lon := p.Home.Value.Lat, p.Home.Value.Lon
			s.HomeLat, s.HomeLon = &lat, &lon
		}
	}
	p.State.apply(&s.State)
	p.Zip.apply(&s.Zip)
	p.MaxDistanceMiles.applyPtr(&s.MaxDistanceMiles)
	p.Budget.applyPtr(&s.Budget)
	p.FamilyIncome.applyPtr(&s.FamilyIncome)
	if p.IntendedMajors.Set {
		s.IntendedMajors = append([]Major(nil), p.IntendedMajors.Value...)
	}
	p.PreferredSize.apply(&s.PreferredSize)
	p.PreferredSetting.apply(&s.PreferredSetting)
	return s
}
