package httpapi

import (
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"net/mail"
	"regexp"
	"slices"
	"strings"
	"time"

	"github.com/collegematch/matching/internal/domain"
)

// Onboarding saves student profiles.
type Onboarding interface {
	SaveProfile(ctx context.Context, studentID string, patch domain.ProfilePatch) (domain.Student, bool, error)
}

var (
	yearRe = regexp.MustCompile(`^[0-9]{4}$`)
	zipRe  = regexp.MustCompile(`^[0-9]{5}(-[0-9]{4})?$`)
)

// onboardingScalarFields are the onboarding fields whose values are not
// objects or arrays; onboardingFields are all of them.
var (
	onboardingScalarFields = []string{"student_id", "name", "email", "graduation_year", "gpa", "state", "zip",
		"max_distance_miles", "budget", "family_income", "preferred_size", "preferred_setting"}
	onboardingFields = append([]string{"test_scores", "home", "intended_majors"}, onboardingScalarFields...)
)

// maxIntendedMajors is the most intended_majors a profile holds.
const maxIntendedMajors = 10

// parseProfile validates an onboarding body into a patch; problems maps
// each offending (dotted) field to what is wrong with it.
func parseProfile(body []byte) (studentID string, p domain.ProfilePatch, problems map[string]string) {
	problems = map[string]string{}
	f, ok := objectFields("", body, onboardingFields, problems)
	if !ok {
		return "", p, problems
	}
	if id := f.String("student_id", false); id.Set && !id.Null {
		if !isUUID(id.Value) {
			f.bad("student_id", "must be a UUID")
		}
		studentID = strings.ToLower(id.Value)
	}

	p.Name = f.String("name", false)
	if p.Name.Set && !p.Name.Null && (p.Name.Value == "" || len(p.Name.Value) > 200) {
		f.bad("name", "must be 1 to 200 characters")
	}
	p.Email = f.String("email", false)
	if p.Email.Set && !p.Email.Null {
		p.Email.Value = strings.ToLower(p.Email.Value)
		if !validEmail(p.Email.Value) {
			f.bad("email", "must be a valid e-mail address such as name@example.com")
		}
	}
	p.GraduationYear = f.String("graduation_year", false)
	if y := p.GraduationYear; y.Set && !y.Null && (!yearRe.MatchString(y.Value) || y.Value < "1950" || y.Value > "2100") {
		f.bad("graduation_year", `must be a 4-digit year from 1950 to 2100 as a string, such as "2027"`)
	}
	p.GPA = f.Number("gpa", 0, 5)

	if ts, set := f.Object("test_scores", []string{"sat", "act"}); set.Set {
		if set.Null {
			p.SAT, p.ACT = domain.Field[int]{Set: true, Null: true}, domain.Field[int]{Set: true, Null: true}
		} else if ts != nil {
			p.SAT = ts.Int("sat", 400, 1600)
			p.ACT = ts.Int("act", 1, 36)
		}
	}
	if home, set := f.Object("home", []string{"lat", "lon"}); set.Set {
		if set.Null {
			p.Home = domain.Field[domain.Point]{Set: true, Null: true}
		} else if home != nil {
			lat, lon := home.Number("lat", -90, 90), home.Number("lon", -180, 180)
			for name, v := range map[string]domain.Field[float64]{"lat": lat, "lon": lon} {
				if _, bad := home.problems["home."+name]; !bad && (!v.Set || v.Null) {
					home.bad(name, "is required")
				}
			}
			if lat.Set && !lat.Null && lon.Set && !lon.Null {
				p.Home = domain.Val(domain.Point{Lat: lat.Value, Lon: lon.Value})
			}
		}
	}
	p.State = f.String("state", true)
	if p.State.Set && !p.State.Null {
		p.State.Value = strings.ToUpper(p.State.Value)
		if _, ok := domain.LookupState(p.State.Value); !ok {
			f.bad("state", "must be a two-letter US state code such as CA or DC")
		}
	}
	p.Zip = f.String("zip", true)
	if p.Zip.Set && !p.Zip.Null {
		if !zipRe.MatchString(p.Zip.Value) {
			f.bad("zip", "must be a 5-digit ZIP code")
		}
		p.Zip.Value = p.Zip.Value[:min(5, len(p.Zip.Value))]
	}
	p.MaxDistanceMiles = f.Int("max_distance_miles", 1, 5000)
	p.Budget = f.Int("budget", 0, 1_000_000)
	p.FamilyIncome = f.Int("family_income", 0, 100_000_000)
	if majors := f.StringArray("intended_majors", maxIntendedMajors); majors.Set {
		var out []domain.Major
		for i, m := range majors.Value {
			mj, ok := domain.ParseMajor(m)
			if !ok {
				f.bad("intended_majors["+itoa(i)+"]", "is not a known major; use a key such as computer, engineering, business_marketing, "+
					"biological or health, a name such as Computer Science or Communications, or a CIP code such as 11.0701")
				continue
			}
			if !slices.Contains(out, mj) {
				out = append(out, mj)
			}
		}
		p.IntendedMajors = domain.Field[[]domain.Major]{Set: true, Value: out}
	}
	p.PreferredSize = f.String("preferred_size", true)
	if v := p.PreferredSize; v.Set && !v.Null && !slices.Contains(domain.PreferredSizes, strings.ToLower(v.Value)) {
		f.bad("preferred_size", "must be small, medium or large")
	}
	p.PreferredSize.Value = strings.ToLower(p.PreferredSize.Value)
	p.PreferredSetting = f.String("preferred_setting", true)
	if v := p.PreferredSetting; v.Set && !v.Null && !slices.Contains(domain.PreferredSettings, strings.ToLower(v.Value)) {
		f.bad("preferred_setting", "must be city, suburb, town or rural")
	}
	p.PreferredSetting.Value = strings.ToLower(p.PreferredSetting.Value)
	return studentID, p, problems
}

func validEmail(s string) bool {
	if len(s) > 254 || strings.ContainsAny(s, " <>\"") {
		return false
	}
	a, err := mail.ParseAddress(s)
	if err != nil || a.Address != s {
		return false
	}
	_, host, ok := strings.Cut(s, "@")
	return ok && strings.Contains(host, ".") && !strings.HasPrefix(host, ".") && !strings.HasSuffix(host, ".")
}

// profileJSON is the stored profile as the API shows it.
type profileJSON struct {
	Name             string        `json:"name"`
	Email            string        `json:"email"`
	GraduationYear   string        `json:"graduation_year"`
	GPA              *float64      `json:"gpa"`
	TestScores       testScores    `json:"test_scores"`
	Home             *domain.Point `json:"home"`
	State            *string       `json:"state"`
	Zip              *string       `json:"zip"`
	MaxDistanceMiles *int          `json:"max_distance_miles"`
	Budget           *int          `json:"budget"`
	FamilyIncome     *int          `json:"family_income"`
	IntendedMajors   []string      `json:"intended_majors"`
	PreferredSize    *string       `json:"preferred_size"`
	PreferredSetting *string       `json:"preferred_setting"`
	CreatedAt        time.Time     `json:"created_at"`
	UpdatedAt        time.Time     `json:"updated_at"`
}

type testScores struct {
	SAT *int `json:"sat"`
	ACT *int `json:"act"`
}

func nonEmpty(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}

func toProfileJSON(s domain.Student) profileJSON {
	p := profileJSON{
		Name: s.Name, Email: s.Email, GraduationYear: s.GraduationYear, GPA: s.GPA,
		TestScores: testScores{SAT: s.SAT, ACT: s.ACT}, State: nonEmpty(s.State), Zip: nonEmpty(s.Zip),
		MaxDistanceMiles: s.MaxDistanceMiles, Budget: s.Budget, FamilyIncome: s.FamilyIncome,
		IntendedMajors: make([]string, len(s.IntendedMajors)), PreferredSize: nonEmpty(s.PreferredSize),
		PreferredSetting: nonEmpty(s.PreferredSetting), CreatedAt: s.CreatedAt.UTC(), UpdatedAt: s.UpdatedAt.UTC(),
	}
	if s.HomeLat != nil && s.HomeLon != nil {
		p.Home = &domain.Point{Lat: *s.HomeLat, Lon: *s.HomeLon}
	}
	for i, m := range s.IntendedMajors {
		p.IntendedMajors[i] = string(m)
	}
	return p
}

// readProfile decodes and validates POST /v2/onboarding/minimal: the
// body's student_id ("" when absent) and the profile patch.
func readProfile(r *http.Request) (string, domain.ProfilePatch, error) {
	body, err := readBody(r)
	if err != nil {
		return "", domain.ProfilePatch{}, err
	}
	// Only what stops the reading (depth, array lengths) is answered from
	// the shape: every other problem, unknown and repeated fields
	// included, is reported at once by parseProfile.
	if p := scanShape(body, onboardingBody); p.fatal {
		return "", domain.ProfilePatch{}, p.err()
	}
	if !json.Valid(body) {
		var v any
		return "", domain.ProfilePatch{}, decodeError(json.Unmarshal(body, &v))
	}
	id, patch, problems := parseProfile(body)
	if len(problems) > 0 {
		return "", domain.ProfilePatch{}, domain.Invalid(summarize(problems), problems)
	}
	return id, patch, nil
}

// handleOnboardingMinimal creates (201) or updates (200) the profile of the
// token's student, or of body.student_id for a service token.
func handleOnboardingMinimal(log *slog.Logger, o Onboarding) http.Handler {
	type response struct {
		StudentID       string      `json:"student_id"`
		Profile         profileJSON `json:"profile"`
		ProfileComplete bool        `json:"profile_complete"`
		Missing         []string    `json:"missing"`
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		id, patch, err := readProfile(r)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		claims, _ := claimsFrom(r.Context())
		if id == "" {
			id = strings.ToLower(claims.Subject)
			if !isUUID(id) {
				respondErr(w, r, log, domain.Invalid("the token's subject is not a student UUID; a service token must name student_id in the body",
					map[string]string{"student_id": "is required when the token's sub is not a student UUID"}))
				return
			}
		}
		st, created, err := o.SaveProfile(r.Context(), id, patch)
		if err != nil {
			respondErr(w, r, log, err)
			return
		}
		status := http.StatusOK
		if created {
			status = http.StatusCreated
		}
		missing := st.Missing()
		encode(w, status, response{StudentID: st.ID, Profile: toProfileJSON(st), ProfileComplete: len(missing) == 0, Missing: missing})
	})
}
