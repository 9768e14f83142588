package domain

import "math"

// State is a US state or DC with its census region and a population-weighted
// centre, used when a student gives only a state.
type State struct {
	Code   string
	Name   string
	Region Region
	Lat    float64
	Lon    float64
}

// Region is a US Census region.
type Region string

const (
	RegionNortheast Region = "northeast"
	RegionMidwest   Region = "midwest"
	RegionSouth     Region = "south"
	RegionWest      Region = "west"
)

// States lists the 50 states and DC. Each centre is an approximate centre of
// the state's population (0.01 degree), good enough for distance bands.
var States = []State{
	{"AL", "Alabama", RegionSouth, 32.91, -86.76},
	{"AK", "Alaska", RegionWest, 61.40, -148.87},
	{"AZ", "Arizona", RegionWest, 33.36, -111.81},
	{"AR", "Arkansas", RegionSouth, 35.14, -92.55},
	{"CA", "California", RegionWest, 35.47, -119.36},
	{"CO", "Colorado", RegionWest, 39.48, -105.32},
	{"CT", "Connecticut", RegionNortheast, 41.52, -72.83},
	{"DE", "Delaware", RegionSouth, 39.36, -75.56},
	{"DC", "District of Columbia", RegionSouth, 38.91, -77.01},
	{"FL", "Florida", RegionSouth, 27.80, -81.63},
	{"GA", "Georgia", RegionSouth, 33.33, -84.08},
	{"HI", "Hawaii", RegionWest, 21.11, -157.53},
	{"ID", "Idaho", RegionWest, 43.88, -115.29},
	{"IL", "Illinois", RegionMidwest, 41.28, -88.38},
	{"IN", "Indiana", RegionMidwest, 40.06, -86.28},
	{"IA", "Iowa", RegionMidwest, 41.94, -92.94},
	{"KS", "Kansas", RegionMidwest, 38.43, -97.22},
	{"KY", "Kentucky", RegionSouth, 37.80, -85.28},
	{"LA", "Louisiana", RegionSouth, 30.68, -91.43},
	{"ME", "Maine", RegionNortheast, 44.33, -69.63},
	{"MD", "Maryland", RegionSouth, 39.04, -76.75},
	{"MA", "Massachusetts", RegionNortheast, 42.27, -71.36},
	{"MI", "Michigan", RegionMidwest, 42.87, -84.17},
	{"MN", "Minnesota", RegionMidwest, 45.29, -93.72},
	{"MS", "Mississippi", RegionSouth, 32.57, -89.59},
	{"MO", "Missouri", RegionMidwest, 38.37, -92.19},
	{"MT", "Montana", RegionWest, 46.68, -111.07},
	{"NE", "Nebraska", RegionMidwest, 41.16, -97.40},
	{"NV", "Nevada", RegionWest, 37.30, -115.49},
	{"NH", "New Hampshire", RegionNortheast, 43.15, -71.50},
	{"NJ", "New Jersey", RegionNortheast, 40.43, -74.43},
	{"NM", "New Mexico", RegionWest, 34.77, -106.36},
	{"NY", "New York", RegionNortheast, 41.51, -74.65},
	{"NC", "North Carolina", RegionSouth, 35.52, -80.01},
	{"ND", "North Dakota", RegionMidwest, 47.39, -99.26},
	{"OH", "Ohio", RegionMidwest, 40.46, -82.67},
	{"OK", "Oklahoma", RegionSouth, 35.59, -96.93},
	{"OR", "Oregon", RegionWest, 44.73, -122.55},
	{"PA", "Pennsylvania", RegionNortheast, 40.46, -77.08},
	{"RI", "Rhode Island", RegionNortheast, 41.75, -71.45},
	{"SC", "South Carolina", RegionSouth, 34.04, -81.03},
	{"SD", "South Dakota", RegionMidwest, 44.05, -98.68},
	{"TN", "Tennessee", RegionSouth, 35.84, -86.40},
	{"TX", "Texas", RegionSouth, 30.97, -97.39},
	{"UT", "Utah", RegionWest, 40.51, -111.88},
	{"VT", "Vermont", RegionNortheast, 44.09, -72.84},
	{"VA", "Virginia", RegionSouth, 38.03, -77.73},
	{"WA", "Washington", RegionWest, 47.33, -121.64},
	{"WV", "West Virginia", RegionSouth, 38.77, -80.84},
	{"WI", "Wisconsin", RegionMidwest, 43.73, -89.01},
	{"WY", "Wyoming", RegionWest, 42.54, -107.61},
}

var stateByCode = func() map[string]State {
	m := make(map[string]State, len(States))
	for _, s := range States {
		m[s.Code] = s
	}
	return m
}()

// LookupState finds a state by its two-letter USPS code (upper case).
func LookupState(code string) (State, bool) {
	s, ok := stateByCode[code]
	return s, ok
}

// DistanceMiles is the great-circle distance between two points.
func DistanceMiles(lat1, lon1, lat2, lon2 float64) float64 {
	const earthRadiusMiles = 3958.8
	const rad = math.Pi / 180
	dLat := (lat2 - lat1) * rad
	dLon := (lon2 - lon1) * rad
	a := math.Sin(dLat/2)*math.Sin(dLat/2) +
		math.Cos(lat1*rad)*math.Cos(lat2*rad)*math.Sin(dLon/2)*math.Sin(dLon/2)
	return 2 * earthRadiusMiles * math.Asin(math.Min(1, math.Sqrt(a)))
}
