package match

import "github.com/collegematch/matching/internal/domain"

func ptr[T any](v T) *T { return &v }

// Hand-made schools and students for golden and table tests.

func keystoneState() domain.School {
	return domain.School{
		ID: "00000000-0000-4000-8000-000000000001", Name: "Keystone State University", City: "State College", State: "PA",
		Lat: ptr(40.80), Lon: ptr(-77.86), Control: domain.ControlPublic, Locale: ptr[int16](13), Size: ptr[int32](41000),
		AdmissionRate: ptr(0.55), SAT25: ptr[int16](1210), SAT75: ptr[int16](1340), ACT25: ptr[int16](26), ACT75: ptr[int16](31),
		TuitionIn: ptr[int32](19000), TuitionOut: ptr[int32](36000), AvgNetPrice: ptr[int32](22000),
		NetPriceByBand: [domain.IncomeBands]*int32{ptr[int32](9800), ptr[int32](11500), ptr[int32](14180), ptr[int32](21000), ptr[int32](27000)},
		PellRate:       ptr(0.2), LoanRate: ptr(0.45), GradRate: ptr(0.78), RetentionRate: ptr(0.93),
		Earnings6yr: ptr[int32](52000), Earnings10yr: ptr[int32](68300),
		ProgramShares: map[domain.Major]float64{"computer": 0.18, "engineering": 0.12, "business_marketing": 0.15},
		Active:        true, Source: "scorecard",
	}
}

func pacificCollege() domain.School {
	return domain.School{
		ID: "00000000-0000-4000-8000-000000000002", Name: "Pacific Crest College", City: "Pasadena", State: "CA",
		Lat: ptr(34.15), Lon: ptr(-118.13), Control: domain.ControlNonprofit, Locale: ptr[int16](21), Size: ptr[int32](1800),
		AdmissionRate: ptr(0.09), SAT25: ptr[int16](1470), SAT75: ptr[int16](1560), ACT25: ptr[int16](32), ACT75: ptr[int16](35),
		TuitionIn: ptr[int32](62000), TuitionOut: ptr[int32](62000), AvgNetPrice: ptr[int32](38000),
		NetPriceByBand: [domain.IncomeBands]*int32{ptr[int32](6000), ptr[int32](9000), ptr[int32](16000), ptr[int32](30000), ptr[int32](58000)},
		PellRate:       ptr(0.12), LoanRate: ptr(0.2), GradRate: ptr(0.93), RetentionRate: ptr(0.97),
		Earnings6yr: ptr[int32](70000), Earnings10yr: ptr[int32](91000),
		ProgramShares: map[domain.Major]float64{"biological": 0.22, "physical_science": 0.2, "engineering": 0.3},
		Active:        true, Source: "seed",
	}
}

func lonestarCommunity() domain.School {
	return domain.School{
		ID: "00000000-0000-4000-8000-000000000003", Name: "Lone Star Valley College", City: "Waco", State: "TX",
		Control: domain.ControlPublic, Locale: ptr[int16](32), Size: ptr[int32](9000),
		TuitionIn: ptr[int32](3500), TuitionOut: ptr[int32](9000), PellRate: ptr(0.45), RetentionRate: ptr(0.62),
		Active: true, Source: "scorecard",
	}
}

func bareSchool() domain.School {
	return domain.School{ID: "00000000-0000-4000-8000-000000000004", Name: "Unlisted Institute", Active: true}
}

func studentSAT() domain.Student {
	return domain.Student{
		ID: "s1", SAT: ptr(1380), GPA: ptr(3.8), HomeLat: ptr(39.95), HomeLon: ptr(-75.16), State: "PA",
		Budget: ptr(20000), FamilyIncome: ptr(60000), IntendedMajors: []domain.Major{"computer"},
		PreferredSize: "large", PreferredSetting: "city",
	}
}

func studentACT() domain.Student {
	return domain.Student{
		ID: "s2", ACT: ptr(27), State: "OH", FamilyIncome: ptr(150000), MaxDistanceMiles: ptr(300),
		IntendedMajors: []domain.Major{"biological", "health"}, PreferredSize: "small",
	}
}

func studentGPA() domain.Student {
	return domain.Student{
		ID: "s3", GPA: ptr(3.2), HomeLat: ptr(32.78), HomeLon: ptr(-96.80), State: "TX", Budget: ptr(10000),
	}
}

func studentMinimal() domain.Student {
	return domain.Student{ID: "s4", SAT: ptr(1100), State: "NY"}
}
