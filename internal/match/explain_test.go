package match

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/collegematch/matching/internal/domain"
)

func goldenCatalog() *Catalog {
	return NewCatalog([]domain.School{keystoneState(), pacificCollege(), lonestarCommunity(), bareSchool()})
}

func TestGoldenExplanations(t *testing.T) {
	cat := goldenCatalog()
	tests := []struct {
		name        string
		student     domain.Student
		school      string
		grade, band string
		reasons     []string
		explanation string
	}{
		{
			name: "strong SAT student, public flagship in state", student: studentSAT(), school: keystoneState().ID,
			grade: "B+", band: BandSafety,
			reasons: []string{
				"154 miles from home",
				"Your SAT of 1380 is above this school's middle 50% (1210-1340)",
				"Net price about $14,200 a year, under your $20,000 budget",
				"A city campus, as you prefer",
			},
			explanation: "B+ match (78%): a safety school for you. Your SAT of 1380 is above this school's middle 50% (1210-1340), " +
				"and it admits 55% of applicants. 18% of its degrees are in Computer and Information Sciences. " +
				"Based on the net price for families earning $48k-75k (College Scorecard), the estimated net price is about $14,200 a year, " +
				"under your $20,000 budget. 20% of students receive Pell grants and 45% take federal loans. " +
				"It is 154 miles from home, within your 500-mile range. It is a large school (41,000 undergraduates) in a city. " +
				"78% of students graduate, and former students earn a median $68,300 ten years after enrolling.",
		},
		{
			name: "ACT student, home from state, selective private far away", student: studentACT(), school: pacificCollege().ID,
			grade: "D", band: BandReach,
			reasons: []string{
				"A small school (1,800 undergraduates), as you prefer",
				"93% of students graduate",
				"Strong in Biological and Biomedical Sciences (22% of degrees)",
				"Former students earn a median $91,000 ten years after enrolling",
				"About 1,980 miles from home, beyond your 300-mile range",
			},
			explanation: "D match (49%): a reach school for you. Your ACT of 27 is below this school's middle 50% (ACT 32-35), " +
				"and it admits 9% of applicants. 22% of its degrees are in Biological and Biomedical Sciences. " +
				"Based on the net price for families earning over $110k, the estimated net price is about $58,000 a year. " +
				"12% of students receive Pell grants and 20% take federal loans. It is about 1,980 miles from home, beyond your 300-mile range. " +
				"It is a small school (1,800 undergraduates) in a suburb. " +
				"93% of students graduate, and former students earn a median $91,000 ten years after enrolling.",
		},
		{
			name: "GPA-only student, sparse open-admission college", student: studentGPA(), school: lonestarCommunity().ID,
			grade: "B-", band: BandSafety,
			reasons: []string{
				"About 130 miles from home",
				"In-state tuition about $3,500 a year, under your $10,000 budget",
				"45% of students receive Pell grants",
				"Limited data is available for this school",
			},
			explanation: "B- match (66%): a safety school for you. This school reports no SAT or ACT range. " +
				"Based on the published in-state tuition (College Scorecard), the estimated price is about $3,500 a year, under your $10,000 budget. " +
				"45% of students receive Pell grants. It is about 130 miles from home, within your 500-mile range. " +
				"It is a medium-sized school (9,000 undergraduates) in a town. 62% of first-year students return for a second year. " +
				"Some data is missing for this school, so parts of this match are estimates.",
		},
		{
			name: "school with no data", student: studentMinimal(), school: bareSchool().ID,
			grade: "C-", band: BandSafety,
			reasons: []string{"Limited data is available for this school"},
			explanation: "C- match (50%): a safety school for you. This school reports no SAT or ACT range. This school reports no price. " +
				"Some data is missing for this school, so parts of this match are estimates.",
		},
		{
			name: "strong student, school out of reach and without the major", student: studentSAT(), school: pacificCollege().ID,
			grade: "C-", band: BandReach,
			reasons: []string{
				"Net price about $16,000 a year, under your $20,000 budget",
				"93% of students graduate",
				"Former students earn a median $91,000 ten years after enrolling",
				"2,380 miles from home, beyond your 500-mile range",
			},
			explanation: "C- match (52%): a reach school for you. Your SAT of 1380 is below this school's middle 50% (1470-1560), " +
				"and it admits 9% of applicants. It awards no degrees in Computer and Information Sciences. " +
				"Based on the net price for families earning $48k-75k, the estimated net price is about $16,000 a year, under your $20,000 budget. " +
				"12% of students receive Pell grants and 20% take federal loans. It is 2,380 miles from home, beyond your 500-mile range. " +
				"It is a small school (1,800 undergraduates) in a suburb. " +
				"93% of students graduate, and former students earn a median $91,000 ten years after enrolling.",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := NewProfile(tt.student)
			w := SeedWeights(p)
			idx, ok := cat.Index(tt.school)
			require.True(t, ok)
			d := Detail(p, w, cat, idx)
			assert.Equal(t, tt.grade, d.Grade)
			assert.Equal(t, tt.band, d.AdmissionBand)
			assert.Equal(t, tt.reasons, d.Reasons)
			assert.Equal(t, tt.explanation, d.Explanation)
			assert.Equal(t, tt.reasons, Reasons(p, w, cat, idx))
			assert.Equal(t, tt.explanation, Explanation(p, w, cat, idx))
			assert.LessOrEqual(t, len(d.Reasons), 5)
		})
	}
}

func TestScoreComparisonWording(t *testing.T) {
	satOnly := keystoneState()
	satOnly.ACT25, satOnly.ACT75 = nil, nil
	actOnly := keystoneState()
	actOnly.SAT25, actOnly.SAT75 = nil, nil
	tests := []struct {
		name    string
		student domain.Student
		school  domain.School
		want    string
	}{
		{"SAT inside", domain.Student{SAT: ptr(1250)}, satOnly, "Your SAT of 1250 is within this school's middle 50% (1210-1340)"},
		{"SAT below", domain.Student{SAT: ptr(1100)}, satOnly, "Your SAT of 1100 is below this school's middle 50% (1210-1340)"},
		{"SAT at the 75th is within", domain.Student{SAT: ptr(1340)}, satOnly, "Your SAT of 1340 is within this school's middle 50% (1210-1340)"},
		{"ACT against SAT range", domain.Student{ACT: ptr(30)}, satOnly, "Your ACT of 30 (about 1370 on the SAT) is above this school's middle 50% (1210-1340)"},
		{"ACT against ACT range", domain.Student{ACT: ptr(28)}, keystoneState(), "Your ACT of 28 is within this school's middle 50% (ACT 26-31)"},
		{"SAT against ACT-only range", domain.Student{SAT: ptr(1500)}, actOnly, "Your SAT of 1500 is above this school's middle 50% (ACT 26-31)"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := NewCatalog([]domain.School{tt.school})
			v := newView(NewProfile(tt.student), DefaultWeights(), cat, 0)
			c, ok := v.comparison()
			require.True(t, ok)
			assert.Equal(t, tt.want, c.student+" is "+c.where()+" this school's middle 50% ("+c.school+")")
		})
	}
}

// Reasons only ever state what the data says: every number in a line comes
// from the school or the student, checked here for the price line.
func TestReasonPriceLine(t *testing.T) {
	s := keystoneState()
	tests := []struct {
		name    string
		student domain.Student
		want    string
	}{
		{"over budget", domain.Student{State: "PA", FamilyIncome: ptr(200000), Budget: ptr(15000)},
			"Net price about $27,000 a year, over your $15,000 budget"},
		{"exactly at budget", domain.Student{State: "PA", FamilyIncome: ptr(200000), Budget: ptr(27000)},
			"Net price about $27,000 a year, within your $27,000 budget"},
		{"no budget, band price", domain.Student{State: "PA", FamilyIncome: ptr(20000)},
			"Net price about $9,800 a year for families earning $0-30k"},
		{"no income: average net price", domain.Student{State: "PA", Budget: ptr(30000)},
			"Average net price about $22,000 a year, under your $30,000 budget"},
		{"shown price equals the budget", domain.Student{State: "PA", FamilyIncome: ptr(60000), Budget: ptr(14200)},
			"Net price about $14,200 a year, within your $14,200 budget"},
		{"slightly over", domain.Student{State: "PA", FamilyIncome: ptr(60000), Budget: ptr(14150)},
			"Net price about $14,200 a year, over your $14,150 budget"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cat := NewCatalog([]domain.School{s})
			v := newView(NewProfile(tt.student), DefaultWeights(), cat, 0)
			var texts []string
			for _, c := range v.candidates(nil) {
				texts = append(texts, v.text(c.line))
			}
			assert.Contains(t, texts, tt.want)
		})
	}
}

func TestBudgetClause(t *testing.T) {
	tests := []struct {
		price  float64
		budget int
		want   string
		over   bool
	}{
		{14180, 20000, "under your $20,000 budget", false},
		{19980, 20000, "within your $20,000 budget", false},
		{20000, 20000, "within your $20,000 budget", false},
		{20030, 20000, "just over your $20,000 budget", true},
		{20060, 20000, "over your $20,000 budget", true},
		{500, 0, "over your $0 budget", true},
	}
	for _, tt := range tests {
		got, over := budgetClause(tt.price, tt.budget)
		assert.Equal(t, tt.want, got, "price %v", tt.price)
		assert.Equal(t, tt.over, over, "price %v", tt.price)
	}
}

func TestFormatting(t *testing.T) {
	assert.Equal(t, "0", commas(0))
	assert.Equal(t, "999", commas(999))
	assert.Equal(t, "1,000", commas(1000))
	assert.Equal(t, "65,000", commas(65000))
	assert.Equal(t, "1,234,567", commas(1234567))
	assert.Equal(t, "-1,200", commas(-1200))
	assert.Equal(t, "-999", commas(-999))
	assert.Equal(t, "-9,223,372,036,854,775,808", commas(-1<<63))
	for _, s := range []string{"", "a", "about 10 miles", "1 mile", "Zed", "é grand", "\xe9x", "an"} {
		assert.Equal(t, "x"+capitalize(s), string(capitalizeFrom([]byte("x"+s), 1)), "%q", s)
	}
	assert.Equal(t, "$14,200", money(14180))
	assert.Equal(t, "$14,200", money(14249))
	assert.Equal(t, "$0", money(20))
	assert.Equal(t, "$20,000", exact(20000))
	assert.Equal(t, "78%", pct(0.78))
	assert.Equal(t, "under 1%", pct(0.004))
	assert.Equal(t, "0%", pct(0))
	assert.Equal(t, "3.7", gpa(3.7))
	assert.Equal(t, "3.33", gpa(3.3333))
	assert.Equal(t, "small", sizeWord(4999))
	assert.Equal(t, "medium-sized", sizeWord(5000))
	assert.Equal(t, "medium-sized", sizeWord(15000))
	assert.Equal(t, "large", sizeWord(15001))
}

func TestMilesText(t *testing.T) {
	tests := []struct {
		miles  float64
		approx bool
		want   string
	}{
		{0.4, false, "less than a mile"}, {1.2, false, "1 mile"}, {311.6, false, "312 miles"}, {1239.7, false, "1,240 miles"},
		{4, true, "less than 10 miles"}, {311.6, true, "about 310 miles"}, {1983, true, "about 1,980 miles"},
	}
	for _, tt := range tests {
		v := &view{p: Profile{HomeApprox: tt.approx}, f: &features{locK: 2}, b: breakdown{distance: tt.miles}}
		assert.Equal(t, tt.want, v.milesText())
	}
}
