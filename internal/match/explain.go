package match

import (
	"cmp"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/collegematch/matching/internal/domain"
)

// Reason polarity.
const (
	caveat   = -1
	neutral  = 0
	positive = 1
)

// reason is one match_reasons line the data supports: which line, its
// polarity and relevance. Its words are made only when it is shown (text).
type reason struct {
	line reasonLine
	pol  int
	rel  float64 // how much the factor behind it moves this match
}

// reasonLine names a line's wording (text).
type reasonLine uint8

const (
	lineScores             reasonLine = iota // test scores against the middle 50%
	lineVerySelective                        // admits under 25%
	lineAdmits                               // the admission rate
	lineNoDegrees                            // none in the student's majors
	lineStrongIn                             // the best major's share, strong
	lineFewDegrees                           // the best major's share, weak
	lineShareOfDegrees                       // the best major's share
	linePrice                                // the price, against the budget when there is one
	linePell                                 // Pell grants
	lineLoans                                // few federal loans
	lineValue                                // earnings against the price
	lineEarnings                             // earnings
	lineNear                                 // the distance, within range
	lineFar                                  // the distance, beyond range
	lineSizeAsPreferred                      // the size the student prefers
	lineLarger                               // larger than preferred
	lineSmaller                              // smaller than preferred
	lineSettingAsPreferred                   // the setting the student prefers
	lineSettingOther                         // another setting
	lineGraduate                             // the graduation rate
	lineFewGraduate                          // a low graduation rate
	lineRetention                            // the retention rate
	lineLimitedData                          // little data
)

// maxCandidates bounds candidates: at most one line for each of the
// groups it goes through.
const maxCandidates = 12

// Reason selection limits.
const (
	maxPositive = 4
	minReasons  = 3
)

// reasons picks the match_reasons lines: up to four positives by relevance,
// then neutral facts if fewer than three lines were found, then the single
// most relevant caveat.
func (v *view) reasons() []string {
	var buf [maxCandidates]reason
	cands := v.candidates(buf[:0])
	// Most relevant first, in a stable insertion sort (what
	// slices.SortStableFunc does with so few).
	for i := 1; i < len(cands); i++ {
		for j := i; j > 0 && cmp.Compare(cands[j-1].rel, cands[j].rel) < 0; j-- {
			cands[j], cands[j-1] = cands[j-1], cands[j]
		}
	}
	var pos, neu [maxCandidates]reason
	var cav reason
	npos, nneu, ncav := 0, 0, 0
	most := maxPositive
	if v.learned != "" {
		most-- // the learned line is the first positive
	}
	for _, r := range cands {
		switch r.pol {
		case positive:
			if npos < most {
				pos[npos] = r
				npos++
			}
		case caveat:
			if ncav < 1 {
				cav = r
				ncav++
			}
		default:
			neu[nneu] = r
			nneu++
		}
	}
	n := npos
	for range neu[:nneu] {
		if n+ncav >= minReasons {
			break
		}
		n++
	}
	out := make([]string, 0, n+ncav+1)
	if v.learned != "" {
		out = append(out, v.learned)
	}
	for _, r := range pos[:npos] {
		out = append(out, v.text(r.line))
	}
	for _, r := range neu[:n-npos] {
		out = append(out, v.text(r.line))
	}
	if ncav > 0 {
		out = append(out, v.text(cav.line))
	}
	return out
}

// candidates appends to dst every reason line the data supports, with
// polarity and relevance.
func (v *view) candidates(dst []reason) []reason {
	b, sc, f, s, fw := &v.b, &v.sc, v.f, v.s, &v.sc.fw
	rel := func(family, within, factor float64) float64 { return family * within * math.Abs(factor-Neutral) }
	out := dst
	add := func(line reasonLine, pol int, r float64) { out = append(out, reason{line, pol, r}) }

	// Test scores against the middle 50%.
	if pos, ok := v.comparisonPos(); ok && v.p.Basis != BasisGPA {
		pol := positive
		if pos < 0 {
			pol = caveat
		}
		add(lineScores, pol, rel(fw.Academic, sc.wSAT, b.satMatch))
	}
	// Selectivity.
	if v.cold.admRate >= 0 {
		r := rel(fw.Academic, sc.wSel, b.selFit)
		switch {
		case v.cold.admRate < 0.25:
			add(lineVerySelective, caveat, r)
		default:
			add(lineAdmits, neutral, r)
		}
	}
	// Programs.
	if sc.nMaj > 0 && f.hasPrograms {
		r := rel(fw.Academic, sc.wProg, b.program)
		switch {
		case b.bestShare <= 0:
			add(lineNoDegrees, caveat, r)
		case b.program >= 0.6:
			add(lineStrongIn, positive, r)
		case b.program < 0.3:
			add(lineFewDegrees, caveat, r)
		default:
			add(lineShareOfDegrees, neutral, r)
		}
	}
	// Price.
	if v.price.Known() {
		r := rel(fw.Financial, sc.wAff, b.afford)
		pol := neutral
		switch {
		case v.p.HasBudget:
			pol = positive
			if b.price > float64(v.p.Budget) { // budgetClause's over
				pol = caveat
			}
		case b.afford >= 0.8:
			pol = positive
		case b.afford < 0.5:
			pol = caveat
		}
		add(linePrice, pol, r)
	}
	// Aid.
	if b.aid >= 0.65 {
		r := rel(fw.Financial, sc.wAid, b.aid)
		switch {
		case v.cold.pell >= 0.35:
			add(linePell, positive, r)
		case v.cold.loan >= 0 && v.cold.loan <= 0.3:
			add(lineLoans, positive, r)
		}
	}
	// Value and earnings: one line, whichever says more.
	o := outcomesOf(s)
	if _, earnK := earnings10(s); earnK > 0 {
		rEarn := rel(fw.Outcomes, outEarningsWeight, o.earn)
		rVal := rel(fw.Financial, sc.wVal, b.value)
		switch {
		case (b.priceSrc == srcBand || b.priceSrc == srcAverage) && b.value >= 0.7 && rVal > rEarn:
			add(lineValue, positive, rVal)
		case o.earn >= 0.6:
			add(lineEarnings, positive, rEarn)
		case o.earn <= 0.25:
			add(lineEarnings, caveat, rEarn)
		default:
			add(lineEarnings, neutral, rEarn)
		}
	}
	// Distance.
	if b.distance >= 0 {
		r := rel(fw.Campus, sc.wLoc, b.loc)
		if b.distance <= sc.maxDist {
			add(lineNear, positive, r)
		} else {
			add(lineFar, caveat, r)
		}
	}
	// Size, when the student has a size preference.
	if f.hasSize && v.statesSize() {
		r := rel(fw.Campus, sc.wSize, b.size)
		switch {
		case b.size >= 0.8:
			add(lineSizeAsPreferred, positive, r)
		case b.size <= 0.35 && float64(f.sizeScale) > sc.sizePref:
			add(lineLarger, caveat, r)
		case b.size <= 0.35:
			add(lineSmaller, caveat, r)
		}
	}
	// Setting.
	if sc.setting >= 0 && f.setting >= 0 {
		r := rel(fw.Campus, sc.wSet, b.setting)
		switch {
		case b.setting >= 1:
			add(lineSettingAsPreferred, positive, r)
		case b.setting <= 0.35:
			add(lineSettingOther, caveat, r)
		}
	}
	// Graduation.
	if o.gradK > 0 {
		r := rel(fw.Outcomes, outGradWeight, o.grad)
		if g, ok := rate(s.GradRate); ok {
			switch {
			case g >= 0.6:
				add(lineGraduate, positive, r)
			case g < 0.4:
				add(lineFewGraduate, caveat, r)
			default:
				add(lineGraduate, neutral, r)
			}
		} else if ret, ok := rate(s.RetentionRate); ok {
			pol := neutral
			if ret >= 0.85 {
				pol = positive
			}
			add(lineRetention, pol, r)
		}
	}
	if b.confidence < 0.4 {
		add(lineLimitedData, caveat, 0)
	}
	return out
}

// text words a reason line, from the figures candidates chose it on. The
// words are appended to one buffer and made a string once.
func (v *view) text(line reasonLine) string {
	var buf [160]byte
	return string(v.appendText(buf[:0], line))
}

// appendText appends the words of a reason line to t.
func (v *view) appendText(t []byte, line reasonLine) []byte {
	b, sc, f, s := &v.b, &v.sc, v.f, v.s
	switch line {
	case lineScores:
		t = v.appendStudentScore(t)
		pos, _ := v.comparisonPos()
		t = append(t, " is "...)
		t = append(t, scoreComparison{pos: pos}.where()...)
		t = append(t, " this school's middle 50% ("...)
		t = v.appendSchoolRange(t)
		return append(t, ')')
	case lineVerySelective:
		t = append(t, "Very selective: admits "...)
		t = appendPct(t, v.cold.admRate)
		return append(t, " of applicants"...)
	case lineAdmits:
		t = append(t, "Admits "...)
		t = appendPct(t, v.cold.admRate)
		return append(t, " of applicants"...)
	case lineNoDegrees:
		t = append(t, "No degrees awarded in "...)
		return append(t, v.majorList(2)...)
	case lineStrongIn:
		t = append(t, "Strong in "...)
		t = append(t, v.bestMajor()...)
		t = append(t, " ("...)
		t = appendPct(t, b.bestShare)
		return append(t, " of degrees)"...)
	case lineFewDegrees:
		t = append(t, "Few degrees in "...)
		t = append(t, v.bestMajor()...)
		t = append(t, " ("...)
		t = appendPct(t, b.bestShare)
		return append(t, " of degrees)"...)
	case lineShareOfDegrees:
		t = append(t, v.bestMajor()...)
		t = append(t, " is "...)
		t = appendPct(t, b.bestShare)
		return append(t, " of degrees"...)
	case linePrice:
		t = v.appendPriceLead(t)
		if v.p.HasBudget {
			t = append(t, ", "...)
			t, _ = appendBudgetClause(t, b.price, v.p.Budget)
		}
		if b.priceSrc == srcBand && !v.p.HasBudget {
			t = append(t, " for families earning "...)
			t = append(t, incomeBandLabels[sc.band]...)
		}
		return t
	case linePell:
		t = appendPct(t, v.cold.pell)
		return append(t, " of students receive Pell grants"...)
	case lineLoans:
		t = append(t, "Only "...)
		t = appendPct(t, v.cold.loan)
		return append(t, " of students take federal loans"...)
	case lineValue:
		earn, _ := v.earnings()
		t = append(t, "Strong value: former students earn a median "...)
		t = appendMoney(t, earn)
		t = append(t, " on a net price of about "...)
		return appendMoney(t, b.price)
	case lineEarnings:
		earn, when := v.earnings()
		t = append(t, "Former students earn a median "...)
		t = appendMoney(t, earn)
		t = append(t, ' ')
		t = append(t, when...)
		return append(t, " years after enrolling"...)
	case lineNear:
		from := len(t)
		t = v.appendMiles(t)
		t = append(t, " from home"...)
		return capitalizeFrom(t, from)
	case lineFar:
		from := len(t)
		t = v.appendMiles(t)
		t = append(t, " from home, beyond your "...)
		t = strconv.AppendInt(t, int64(int(math.Round(sc.maxDist))), 10)
		t = append(t, "-mile range"...)
		return capitalizeFrom(t, from)
	case lineSizeAsPreferred:
		n := int(*s.Size)
		from := len(t)
		t = append(t, article(sizeWord(n))...)
		t = capitalizeFrom(t, from)
		t = append(t, ' ')
		t = append(t, sizeWord(n)...)
		t = append(t, " school ("...)
		t = appendCommas(t, n)
		return append(t, " undergraduates), as you prefer"...)
	case lineLarger:
		t = append(t, "Larger than you prefer ("...)
		t = appendCommas(t, int(*s.Size))
		return append(t, " undergraduates)"...)
	case lineSmaller:
		t = append(t, "Smaller than you prefer ("...)
		t = appendCommas(t, int(*s.Size))
		return append(t, " undergraduates)"...)
	case lineSettingAsPreferred:
		t = append(t, "A "...)
		t = append(t, settingAdj[f.setting]...)
		return append(t, " campus, as you prefer"...)
	case lineSettingOther:
		t = append(t, "A "...)
		t = append(t, settingAdj[f.setting]...)
		t = append(t, " campus, not the "...)
		t = append(t, settingAdj[sc.setting]...)
		return append(t, " setting you prefer"...)
	case lineGraduate:
		g, _ := rate(s.GradRate)
		t = appendPct(t, g)
		return append(t, " of students graduate"...)
	case lineFewGraduate:
		g, _ := rate(s.GradRate)
		t = append(t, "Only "...)
		t = appendPct(t, g)
		return append(t, " of students graduate"...)
	case lineRetention:
		ret, _ := rate(s.RetentionRate)
		t = appendPct(t, ret)
		return append(t, " of first-year students return for a second year"...)
	case lineLimitedData:
		return append(t, "Limited data is available for this school"...)
	}
	return t
}

// bestMajor names the student's major the school is strongest in.
func (v *view) bestMajor() string { return domain.MajorName(domain.Majors[v.b.bestMajor].Key) }

// earnings is the median earnings a reason line states: ten years after
// entry, else six, with which it is.
func (v *view) earnings() (float64, string) {
	earn, earnK := earnings10(v.s)
	if earnK < 1 {
		return float64(*v.s.Earnings6yr), "six"
	}
	return earn, "ten"
}

// explanation is the match detail paragraph.
func (v *view) explanation() string {
	b, f, s := &v.b, v.f, v.s
	var parts []string
	say := func(p ...string) { parts = append(parts, strings.Join(p, "")) }

	say(Grade(b.score), " match (", strconv.Itoa(Percent(b.score)), "%): ", article(v.band), " ", v.band, " school for you.")

	// Academic.
	admits := ""
	if v.cold.admRate >= 0 {
		admits = "admits " + pct(v.cold.admRate) + " of applicants"
	}
	c, hasCmp := v.comparison()
	switch {
	case hasCmp && v.p.Basis == BasisGPA:
		say("With no test score on file, your GPA of ", gpa(v.p.GPA), " is read as about ", strconv.Itoa(v.p.SAT),
			" on the SAT, ", c.where(), " this school's middle 50% (", c.school, ")", join(", and it ", admits), ".")
	case hasCmp:
		say(c.student, " is ", c.where(), " this school's middle 50% (", c.school, ")", join(", and it ", admits), ".")
	case v.p.Basis == BasisNone:
		say("Add a test score or GPA to see how you compare academically", join("; this school ", admits), ".")
	default:
		say("This school reports no SAT or ACT range", join("; it ", admits), ".")
	}
	if v.sc.nMaj > 0 {
		switch {
		case !f.hasPrograms:
			say("It does not report degrees by field.")
		case b.bestShare <= 0:
			say("It awards no degrees in ", v.majorList(3), ".")
		default:
			say(pct(b.bestShare), " of its degrees are in ", domain.MajorName(domain.Majors[b.bestMajor].Key), ".")
		}
	}

	// Financial.
	if v.price.Known() {
		what := "net price"
		if b.priceSrc == srcTuitionIn || b.priceSrc == srcTuitionOut {
			what = "price"
		}
		budget := ""
		if v.p.HasBudget {
			clause, _ := budgetClause(b.price, v.p.Budget)
			budget = ", " + clause
		}
		say("Based on the ", v.price.Source, ", the estimated ", what, " is about ", money(b.price), " a year", budget, ".")
	} else {
		say("This school reports no price.")
	}
	switch pell, loan := v.cold.pell, v.cold.loan; {
	case pell >= 0 && loan >= 0:
		say(capitalize(pct(pell)), " of students receive Pell grants and ", pct(loan), " take federal loans.")
	case pell >= 0:
		say(capitalize(pct(pell)), " of students receive Pell grants.")
	case loan >= 0:
		say(capitalize(pct(loan)), " of students take federal loans.")
	}

	// Campus.
	if b.distance >= 0 {
		within := "within"
		if b.distance > v.sc.maxDist {
			within = "beyond"
		}
		say("It is ", v.milesText(), " from home, ", within, " your ", strconv.Itoa(int(math.Round(v.sc.maxDist))), "-mile range.")
	}
	switch {
	case f.hasSize && f.setting >= 0:
		n := int(*s.Size)
		say("It is ", article(sizeWord(n)), " ", sizeWord(n), " school (", commas(n), " undergraduates) ", settingPlace[f.setting], ".")
	case f.hasSize:
		n := int(*s.Size)
		say("It is ", article(sizeWord(n)), " ", sizeWord(n), " school (", commas(n), " undergraduates).")
	case f.setting >= 0:
		say("It is ", settingPlace[f.setting], ".")
	}

	// Outcomes.
	grad := ""
	if g, ok := rate(s.GradRate); ok {
		grad = pct(g) + " of students graduate"
	} else if r, ok := rate(s.RetentionRate); ok {
		grad = pct(r) + " of first-year students return for a second year"
	}
	earnText := ""
	if e, k := earnings10(s); k == 1 {
		earnText = "former students earn a median " + money(e) + " ten years after enrolling"
	} else if k > 0 {
		earnText = "former students earn a median " + money(float64(*s.Earnings6yr)) + " six years after enrolling"
	}
	switch {
	case grad != "" && earnText != "":
		say(capitalize(grad), ", and ", earnText, ".")
	case grad != "":
		say(capitalize(grad), ".")
	case earnText != "":
		say(capitalize(earnText), ".")
	}

	if b.confidence < 0.6 {
		say("Some data is missing for this school, so parts of this match are estimates.")
	}
	return strings.Join(parts, " ")
}

// scoreComparison is the student's test score against the school's range,
// worded in the scale the two share.
type scoreComparison struct {
	student string // "Your SAT of 1380"
	school  string // "1210-1340" or "ACT 27-31"
	pos     int    // -1 below the 25th percentile, 0 within, 1 above the 75th
}

func (c scoreComparison) where() string {
	switch c.pos {
	case -1:
		return "below"
	case 1:
		return "above"
	}
	return "within"
}

func (v *view) comparison() (scoreComparison, bool) {
	pos, ok := v.comparisonPos()
	if !ok {
		return scoreComparison{}, false
	}
	var buf [64]byte
	c := scoreComparison{student: string(v.appendStudentScore(buf[:0])), pos: pos}
	c.school = string(v.appendSchoolRange(buf[:0]))
	return c, true
}

// appendStudentScore appends comparison's student: "Your SAT of 1380",
// "Your ACT of 29", or "Your ACT of 29 (about 1330 on the SAT)" when the
// school reports no ACT range.
func (v *view) appendStudentScore(t []byte) []byte {
	p := v.p
	if _, _, hasACT := v.actRange(); p.Basis == BasisACT && hasACT {
		t = append(t, "Your ACT of "...)
		return strconv.AppendInt(t, int64(p.ACT), 10)
	}
	if p.Basis == BasisACT {
		t = append(t, "Your ACT of "...)
		t = strconv.AppendInt(t, int64(p.ACT), 10)
		t = append(t, " (about "...)
		t = strconv.AppendInt(t, int64(p.SAT), 10)
		return append(t, " on the SAT)"...)
	}
	t = append(t, "Your SAT of "...)
	return strconv.AppendInt(t, int64(p.SAT), 10)
}

// appendSchoolRange appends comparison's school: "1210-1340", or "ACT
// 27-31" when the student's ACT is compared with the school's or the
// school's range is its ACT one.
func (v *view) appendSchoolRange(t []byte) []byte {
	actLo, actHi, hasACT := v.actRange()
	if v.p.Basis == BasisACT && hasACT || v.cold.rangeFromACT {
		t = append(t, "ACT "...)
		t = strconv.AppendInt(t, int64(actLo), 10)
		t = append(t, '-')
		return strconv.AppendInt(t, int64(actHi), 10)
	}
	t = strconv.AppendInt(t, int64(v.f.satLo), 10)
	t = append(t, '-')
	return strconv.AppendInt(t, int64(v.f.satHi), 10)
}

// comparisonPos is comparison's pos and ok, without the wording.
func (v *view) comparisonPos() (int, bool) {
	f, p := v.f, v.p
	if !f.hasRange || p.Basis == BasisNone {
		return 0, false
	}
	if actLo, actHi, hasACT := v.actRange(); p.Basis == BasisACT && hasACT {
		return position(float64(p.ACT), float64(actLo), float64(actHi)), true
	}
	return position(float64(p.SAT), float64(f.satLo), float64(f.satHi)), true
}

// actRange is the school's ACT middle 50%, when it reports one.
func (v *view) actRange() (lo, hi int, ok bool) {
	s := v.s
	if s.ACT25 == nil || s.ACT75 == nil || *s.ACT25 <= 0 || *s.ACT75 <= 0 {
		return 0, 0, false
	}
	return int(min(*s.ACT25, *s.ACT75)), int(max(*s.ACT25, *s.ACT75)), true
}

func position(x, lo, hi float64) int {
	switch {
	case x < lo:
		return -1
	case x > hi:
		return 1
	}
	return 0
}

// statesSize reports whether the student has a size preference worth
// mentioning: stated on the profile, or learned away from the default.
func (v *view) statesSize() bool {
	return v.p.PreferredSize != "" || math.Abs(v.w.SizePreference-DefaultWeights().SizePreference) > 0.1
}

// appendPriceLead appends the opening of the price line ("Net price about
// $14,200 a year") to t.
func (v *view) appendPriceLead(t []byte) []byte {
	switch v.b.priceSrc {
	case srcAverage:
		t = append(t, "Average net price about "...)
	case srcTuitionIn:
		t = append(t, "In-state tuition about "...)
	case srcTuitionOut:
		t = append(t, "Out-of-state tuition about "...)
	default:
		t = append(t, "Net price about "...)
	}
	t = appendMoney(t, v.b.price)
	return append(t, " a year"...)
}

// milesText is the distance as a person would say it: "312 miles", "1,240
// miles", "less than a mile"; "about 310 miles" when either end is a
// state's centre rather than a real location.
func (v *view) milesText() string {
	var buf [32]byte
	return string(v.appendMiles(buf[:0]))
}

func (v *view) appendMiles(t []byte) []byte {
	d := v.b.distance
	if v.p.HomeApprox || v.f.locK < 2 {
		r := int(math.Round(d/10) * 10)
		if r < 10 {
			return append(t, "less than 10 miles"...)
		}
		t = append(t, "about "...)
		t = appendCommas(t, r)
		return append(t, " miles"...)
	}
	switch r := int(math.Round(d)); {
	case d < 1:
		return append(t, "less than a mile"...)
	case r == 1:
		return append(t, "1 mile"...)
	default:
		t = appendCommas(t, r)
		return append(t, " miles"...)
	}
}

// majorList names up to n of the student's majors: "Engineering or Physics".
func (v *view) majorList(n int) string {
	var names []string
	for _, m := range v.p.Majors {
		if majorIndex(m) >= 0 && len(names) < n {
			names = append(names, domain.MajorName(m))
		}
	}
	switch len(names) {
	case 0:
		return ""
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " or " + names[len(names)-1]
}

var (
	settingAdj   = [4]string{"city", "suburban", "small-town", "rural"}
	settingPlace = [4]string{"in a city", "in a suburb", "in a town", "in a rural area"}
)

// sizeWord is small (under 5,000 undergraduates), medium-sized (5,000 to
// 15,000) or large.
func sizeWord(n int) string {
	switch {
	case n < 5000:
		return "small"
	case n <= 15000:
		return "medium-sized"
	}
	return "large"
}

// budgetClause compares a yearly price with the budget in words that agree
// with the rounded figure shown next to them: "under your $20,000 budget",
// "within" when the price shows as the budget itself, "just over" when it
// is over by less than the rounding, "over" otherwise. over reports whether
// the price exceeds the budget at all.
func budgetClause(price float64, budget int) (clause string, over bool) {
	var buf [48]byte
	t, over := appendBudgetClause(buf[:0], price, budget)
	return string(t), over
}

func appendBudgetClause(t []byte, price float64, budget int) ([]byte, bool) {
	shown := math.Round(price/100) * 100
	b := float64(budget)
	var verb string
	over := false
	switch {
	case price <= b && shown < b:
		verb = "under"
	case price <= b:
		verb = "within"
	case shown <= b:
		verb, over = "just over", true
	default:
		verb, over = "over", true
	}
	t = append(t, verb...)
	t = append(t, " your $"...)
	t = appendCommas(t, budget)
	return append(t, " budget"...), over
}

// pct formats a share as a whole percent; a share above 0 that rounds to 0
// is "under 1%".
func pct(v float64) string {
	var buf [24]byte
	return string(appendPct(buf[:0], v))
}

func appendPct(t []byte, v float64) []byte {
	p := int(math.Round(v * 100))
	if p == 0 && v > 0 {
		return append(t, "under 1%"...)
	}
	return append(strconv.AppendInt(t, int64(p), 10), '%')
}

// money formats an amount to the nearest $100: "$14,200".
func money(v float64) string {
	var buf [32]byte
	return string(appendMoney(buf[:0], v))
}

func appendMoney(t []byte, v float64) []byte {
	return appendCommas(append(t, '$'), int(math.Round(v/100))*100)
}

// exact formats a whole-dollar amount: "$20,000".
func exact(n int) string {
	var buf [32]byte
	return string(appendCommas(append(buf[:0], '$'), n))
}

// commas formats an integer with thousands separators.
func commas(n int) string {
	var buf [32]byte
	return string(appendCommas(buf[:0], n))
}

func appendCommas(t []byte, n int) []byte {
	var buf [24]byte
	s := strconv.AppendInt(buf[:0], int64(n), 10)
	if s[0] == '-' {
		t = append(t, '-')
		s = s[1:]
	}
	for i, c := range s {
		if i > 0 && (len(s)-i)%3 == 0 {
			t = append(t, ',')
		}
		t = append(t, c)
	}
	return t
}

// gpa formats a GPA with at most two decimals: "3.7", "3.85".
func gpa(g float64) string { return strconv.FormatFloat(math.Round(g*100)/100, 'f', -1, 64) }

func article(word string) string {
	if word != "" && strings.ContainsRune("aeiou", rune(word[0])) {
		return "an"
	}
	return "a"
}

// capitalizeFrom capitalizes the word starting at t[from], as capitalize
// does.
func capitalizeFrom(t []byte, from int) []byte {
	if from >= len(t) {
		return t
	}
	if c := t[from]; c < utf8.RuneSelf {
		if 'a' <= c && c <= 'z' {
			t[from] = c - 'a' + 'A'
		}
		return t
	}
	up := capitalize(string(t[from:]))
	return append(t[:from], up...)
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return strings.ToUpper(s[:1]) + s[1:]
}

// join prefixes s with sep, or returns "" when s is "".
func join(sep, s string) string {
	if s == "" {
		return ""
	}
	return sep + s
}
