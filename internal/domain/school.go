package domain

import "time"

// Control is who runs a school.
type Control int16

const (
	ControlUnknown   Control = 0
	ControlPublic    Control = 1
	ControlNonprofit Control = 2
	ControlForProfit Control = 3
)

// Setting is the kind of place a school is in (from the NCES locale code).
type Setting string

const (
	SettingCity   Setting = "city"
	SettingSuburb Setting = "suburb"
	SettingTown   Setting = "town"
	SettingRural  Setting = "rural"
)

// SettingFromLocale maps an NCES LOCALE code (11-43) to a setting.
func SettingFromLocale(locale int) Setting {
	switch locale / 10 {
	case 1:
		return SettingCity
	case 2:
		return SettingSuburb
	case 3:
		return SettingTown
	case 4:
		return SettingRural
	}
	return ""
}

// Income bands of the Scorecard's net price by family income (NPT41..NPT45).
const (
	IncomeBand0to30k = iota
	IncomeBand30to48k
	IncomeBand48to75k
	IncomeBand75to110k
	IncomeBand110kPlus
	IncomeBands
)

// IncomeBand returns the net-price band of a yearly family income in USD.
func IncomeBand(income float64) int {
	switch {
	case income <= 30000:
		return IncomeBand0to30k
	case income <= 48000:
		return IncomeBand30to48k
	case income <= 75000:
		return IncomeBand48to75k
	case income <= 110000:
		return IncomeBand75to110k
	}
	return IncomeBand110kPlus
}

// School is one institution of the catalogue. Pointer fields are nil when the
// source has no value; scoring treats them as unknown, never as zero.
type School struct {
	ID     string // UUID; for imported schools UUIDv5 of the UNITID
	UnitID *int32 // IPEDS UNITID, nil for generated schools
	Name   string
	City   string
	State  string
	Zip    string
	URL    string
	Lat    *float64
	Lon    *float64
	Region Region

	Control    Control
	Locale     *int16 // NCES LOCALE code
	Size       *int32 // undergraduate degree-seeking enrollment (UGDS)
	PredDegree *int16 // predominant degree: 1 certificate, 2 associate, 3 bachelor's, 4 graduate

	AdmissionRate *float64 // 0-1
	SAT25         *int16   // combined reading+math, 400-1600
	SAT75         *int16
	ACT25         *int16 // composite, 1-36
	ACT75         *int16

	TuitionIn      *int32
	TuitionOut     *int32
	AvgNetPrice    *int32
	NetPriceByBand [IncomeBands]*int32 // by family income band; see IncomeBand

	PellRate   *float64 // share of undergraduates with a Pell grant
	LoanRate   *float64 // share of undergraduates with a federal loan
	MedianDebt *int32

	GradRate      *float64 // completion within 150% of normal time
	RetentionRate *float64 // first-year full-time retention
	Earnings6yr   *int32   // median earnings 6 years after entry
	Earnings10yr  *int32   // median earnings 10 years after entry

	// ProgramShares maps a Major to its share of degrees awarded (0-1).
	ProgramShares map[Major]float64

	Active    bool
	Source    string // "seed", "scorecard"
	UpdatedAt time.Time
}
