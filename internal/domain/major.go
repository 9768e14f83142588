package domain

import (
	"strings"
	"unicode"
)

// Major is a field of study: the two-digit CIP families the College
// Scorecard reports program shares for, keyed by the Scorecard's names.
type Major string

// Majors lists every field with its PCIP code and a display name.
var Majors = []struct {
	Key  Major
	PCIP string
	Name string
}{
	{"agriculture", "PCIP01", "Agriculture"},
	{"resources", "PCIP03", "Natural Resources and Conservation"},
	{"architecture", "PCIP04", "Architecture"},
	{"ethnic_cultural_gender", "PCIP05", "Area, Ethnic, Cultural and Gender Studies"},
	{"communication", "PCIP09", "Communication and Journalism"},
	{"communications_technology", "PCIP10", "Communications Technologies"},
	{"computer", "PCIP11", "Computer and Information Sciences"},
	{"personal_culinary", "PCIP12", "Personal and Culinary Services"},
	{"education", "PCIP13", "Education"},
	{"engineering", "PCIP14", "Engineering"},
	{"engineering_technology", "PCIP15", "Engineering Technologies"},
	{"language", "PCIP16", "Foreign Languages and Linguistics"},
	{"family_consumer_science", "PCIP19", "Family and Consumer Sciences"},
	{"legal", "PCIP22", "Legal Professions"},
	{"english", "PCIP23", "English Language and Literature"},
	{"humanities", "PCIP24", "Liberal Arts and Humanities"},
	{"library", "PCIP25", "Library Science"},
	{"biological", "PCIP26", "Biological and Biomedical Sciences"},
	{"mathematics", "PCIP27", "Mathematics and Statistics"},
	{"military", "PCIP29", "Military Technologies"},
	{"multidiscipline", "PCIP30", "Multi/Interdisciplinary Studies"},
	{"parks_recreation_fitness", "PCIP31", "Parks, Recreation and Fitness"},
	{"philosophy_religious", "PCIP38", "Philosophy and Religious Studies"},
	{"theology_religious_vocation", "PCIP39", "Theology and Religious Vocations"},
	{"physical_science", "PCIP40", "Physical Sciences"},
	{"science_technology", "PCIP41", "Science Technologies"},
	{"psychology", "PCIP42", "Psychology"},
	{"security_law_enforcement", "PCIP43", "Homeland Security and Law Enforcement"},
	{"public_administration_social_service", "PCIP44", "Public Administration and Social Service"},
	{"social_science", "PCIP45", "Social Sciences"},
	{"construction", "PCIP46", "Construction Trades"},
	{"mechanic_repair_technology", "PCIP47", "Mechanic and Repair Technologies"},
	{"precision_production", "PCIP48", "Precision Production"},
	{"transportation", "PCIP49", "Transportation and Materials Moving"},
	{"visual_performing", "PCIP50", "Visual and Performing Arts"},
	{"health", "PCIP51", "Health Professions"},
	{"business_marketing", "PCIP52", "Business, Management and Marketing"},
	{"history", "PCIP54", "History"},
}

// majorAliases are the names students type for a field, beyond its key and
// display name: common majors, abbreviations and older names, each filed
// under its CIP family (CIP 2020). They are written normalized (see
// normalizeMajor); plurals need no entry of their own.
var majorAliases = map[Major][]string{
	"agriculture": {"agricultural science", "agribusiness", "animal science", "agronomy", "horticulture"},
	"resources": {"environmental science", "environmental studies", "natural resources", "forestry", "conservation",
		"wildlife biology", "fisheries", "sustainability"},
	"architecture": {"urban planning", "city planning", "landscape architecture", "architectural studies"},
	"ethnic_cultural_gender": {"gender studies", "women s studies", "womens studies", "ethnic studies", "african american studies",
		"black studies", "american studies", "asian studies", "latin american studies"},
	"communication": {"comms", "journalism", "public relations", "pr", "advertising", "media studies", "mass communication",
		"mass media", "broadcasting", "digital media"},
	"computer": {"computer science", "comp sci", "compsci", "cs", "cis", "computing", "information technology", "it",
		"information systems", "information science", "software development", "programming", "cybersecurity",
		"cyber security", "data science", "artificial intelligence"},
	"personal_culinary": {"culinary arts", "culinary", "cosmetology"},
	"education": {"teaching", "teacher education", "early childhood education", "elementary education",
		"secondary education", "special education"},
	"engineering": {"mechanical engineering", "electrical engineering", "civil engineering", "chemical engineering",
		"aerospace engineering", "biomedical engineering", "computer engineering", "software engineering",
		"industrial engineering", "environmental engineering"},
	"language": {"foreign language", "linguistics", "spanish", "french", "german", "chinese", "japanese", "italian",
		"arabic", "russian", "latin", "classics"},
	"family_consumer_science": {"human development", "child development", "family studies"},
	"legal":                   {"law", "pre law", "prelaw", "paralegal", "legal studies"},
	"english":                 {"literature", "english literature", "creative writing", "writing", "rhetoric"},
	"humanities":              {"liberal arts", "general studies", "liberal studies"},
	"library":                 {"library and information science"},
	"biological": {"biology", "bio", "biological science", "biomedical science", "life science", "pre med", "premed",
		"pre medicine", "biochemistry", "neuroscience", "microbiology", "molecular biology", "marine biology", "ecology",
		"genetics", "zoology"},
	"mathematics":                 {"math", "applied math", "applied mathematics", "statistics", "stats"},
	"military":                    {"military technology"},
	"multidiscipline":             {"interdisciplinary studies", "multidisciplinary studies"},
	"parks_recreation_fitness":    {"kinesiology", "exercise science", "sports management", "sport management", "recreation", "fitness"},
	"philosophy_religious":        {"philosophy", "religion", "religious studies"},
	"theology_religious_vocation": {"theology", "ministry", "divinity"},
	"physical_science": {"physics", "chemistry", "astronomy", "geology", "earth science", "geoscience", "meteorology",
		"atmospheric science"},
	"psychology": {"psych"},
	"security_law_enforcement": {"criminal justice", "law enforcement", "homeland security", "forensic science",
		"fire science", "emergency management"},
	"public_administration_social_service": {"social work", "public administration", "public policy", "human services"},
	"social_science": {"economics", "econ", "political science", "poli sci", "polisci", "politics", "government",
		"international relations", "sociology", "anthropology", "geography", "criminology", "urban studies"},
	"transportation": {"aviation", "professional pilot"},
	"visual_performing": {"art", "fine arts", "studio art", "art history", "music", "theater", "theatre", "drama", "dance",
		"film", "film studies", "cinema", "graphic design", "design", "photography", "animation", "fashion design"},
	"health": {"nursing", "pre nursing", "health science", "public health", "pharmacy", "pre pharmacy", "nutrition",
		"dietetics", "physical therapy", "occupational therapy", "physician assistant", "pre dental", "dental hygiene",
		"medicine", "pre health", "speech pathology", "athletic training"},
	"business_marketing": {"business", "business administration", "business management", "management", "marketing",
		"finance", "accounting", "entrepreneurship", "international business", "human resources", "supply chain",
		"real estate", "hospitality management", "mba"},
}

// majorByName maps every normalized key, display name and alias to its
// major, and majorByCIP each two-digit CIP family to its major.
var majorByName, majorByCIP = func() (map[string]Major, map[string]Major) {
	names := map[string]Major{}
	cip := make(map[string]Major, len(Majors))
	for _, mj := range Majors {
		names[normalizeMajor(string(mj.Key))] = mj.Key
		names[normalizeMajor(mj.Name)] = mj.Key
		cip[strings.TrimPrefix(mj.PCIP, "PCIP")] = mj.Key
	}
	for m, aliases := range majorAliases {
		for _, a := range aliases {
			names[normalizeMajor(a)] = m
		}
	}
	return names, cip
}()

// ParseMajor resolves what a student typed as a major: its key
// ("computer"), display name ("Computer and Information Sciences"), a
// common alias ("Comp Sci", "nursing"), any of these in the plural or
// singular ("Communications"), case, punctuation and spacing aside; or a
// CIP code of 2, 4 or 6 digits, with or without the dot ("11", "11.07",
// "1107", "11.0701"), resolved by its two-digit family. A CIP family the
// College Scorecard does not report programs for is not a major here.
func ParseMajor(s string) (Major, bool) {
	if m, ok := parseCIP(strings.TrimSpace(s)); ok {
		return m, true
	}
	n := normalizeMajor(s)
	if n == "" || len(n) > 100 {
		return "", false
	}
	forms := []string{n}
	if len(n) >= 4 { // "c" is not "cs"
		forms = numberForms(n)
	}
	for _, form := range forms {
		if m, ok := majorByName[form]; ok {
			return m, true
		}
	}
	return "", false
}

// parseCIP reads a CIP code: dd, dd.dd, dddd, dd.dddd or dddddd (also
// "PCIPdd", the Scorecard's column name).
func parseCIP(s string) (Major, bool) {
	s = strings.TrimPrefix(strings.ToUpper(s), "PCIP")
	family, rest, dotted := strings.Cut(s, ".")
	if !dotted {
		if len(s) != 2 && len(s) != 4 && len(s) != 6 {
			return "", false
		}
		family, rest = s[:2], s[2:]
	}
	if len(family) != 2 || (dotted && len(rest) != 2 && len(rest) != 4) || !allDigits(family+rest) {
		return "", false
	}
	m, ok := majorByCIP[family]
	return m, ok
}

func allDigits(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] < '0' || s[i] > '9' {
			return false
		}
	}
	return true
}

// normalizeMajor lowercases s, spells "&" as "and" and turns every run of
// other characters than letters and digits into one space, so
// "Business, Management & Marketing", "business_marketing" and
// "Pre-Med" compare as "business management and marketing",
// "business marketing" and "pre med".
func normalizeMajor(s string) string {
	var b strings.Builder
	space := false
	for _, r := range strings.ToLower(strings.ReplaceAll(s, "&", " and ")) {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			if space && b.Len() > 0 {
				b.WriteByte(' ')
			}
			space = false
			b.WriteRune(r)
			continue
		}
		space = true
	}
	return b.String()
}

// numberForms are n and the singular and plural forms of its last word
// ("communications" also as "communication", "science" as "sciences").
func numberForms(n string) []string {
	forms := []string{n}
	switch {
	case strings.HasSuffix(n, "ies"):
		forms = append(forms, strings.TrimSuffix(n, "ies")+"y")
	case strings.HasSuffix(n, "s"):
		forms = append(forms, strings.TrimSuffix(n, "s"))
		if strings.HasSuffix(n, "es") {
			forms = append(forms, strings.TrimSuffix(n, "es"))
		}
	default:
		forms = append(forms, n+"s")
		if strings.HasSuffix(n, "y") {
			forms = append(forms, strings.TrimSuffix(n, "y")+"ies")
		}
	}
	return forms
}

// MajorName is the display name of a major key.
func MajorName(m Major) string {
	for _, mj := range Majors {
		if mj.Key == m {
			return mj.Name
		}
	}
	return string(m)
}
