package domain

import "strings"

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

var majorAliases = map[string]Major{
	"computer science": "computer", "cs": "computer", "computing": "computer", "information technology": "computer",
	"biology": "biological", "pre-med": "biological", "premed": "biological",
	"business": "business_marketing", "marketing": "business_marketing", "finance": "business_marketing",
	"accounting": "business_marketing", "economics": "social_science", "political science": "social_science",
	"sociology": "social_science", "nursing": "health", "health sciences": "health",
	"math": "mathematics", "statistics": "mathematics", "physics": "physical_science",
	"chemistry": "physical_science", "art": "visual_performing", "music": "visual_performing",
	"theater": "visual_performing", "film": "visual_performing", "journalism": "communication",
	"law": "legal", "pre-law": "legal", "teaching": "education", "philosophy": "philosophy_religious",
	"criminal justice": "security_law_enforcement", "environmental science": "resources",
	"languages": "language", "literature": "english", "liberal arts": "humanities",
	"kinesiology": "parks_recreation_fitness", "social work": "public_administration_social_service",
}

var majorByKey = func() map[string]Major {
	m := make(map[string]Major, len(Majors)*2+len(majorAliases))
	for _, mj := range Majors {
		m[string(mj.Key)] = mj.Key
		m[strings.ToLower(mj.Name)] = mj.Key
	}
	for k, v := range majorAliases {
		m[k] = v
	}
	return m
}()

// ParseMajor resolves a major by key, display name or a common alias, case-insensitively.
func ParseMajor(s string) (Major, bool) {
	k := strings.ToLower(strings.TrimSpace(s))
	if m, ok := majorByKey[k]; ok {
		return m, true
	}
	m, ok := majorByKey[strings.ReplaceAll(k, " ", "_")]
	return m, ok
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
