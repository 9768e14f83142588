package catalog

// seedPlaceKind is how urban a place of the seed table is; it decides the
// NCES locale codes and how far schools scatter around it.
type seedPlaceKind uint8

const (
	seedPlaceMetro seedPlaceKind = iota // large city with suburbs (locale 11, 21)
	seedPlaceCity                       // midsize or small city (12, 13, 21-23)
	seedPlaceTown                       // college town or rural centre (31-33, 41-43)
)

// seedCity is a real place with its approximate coordinates. Radius, in
// miles, overrides the kind's default scatter where the land is narrow
// (islands, DC, Manhattan).
type seedCity struct {
	Name   string
	Lat    float64
	Lon    float64
	Kind   seedPlaceKind
	Radius float64
}

// seedState carries what the generator needs to know about a state:
// roughly how many Title IV institutions IPEDS lists there (used as a
// weight, not a target), how its public tuition compares with the
// national middle, and a few real places schools are put around.
type seedState struct {
	Code          string
	Institutions  int
	TuitionFactor float64
	Cities        []seedCity
}

// seedStates covers the 50 states and DC.
var seedStates = []seedState{
	{"AL", 82, 1.05, []seedCity{
		{"Birmingham", 33.52, -86.80, seedPlaceMetro, 0}, {"Montgomery", 32.37, -86.30, seedPlaceCity, 0},
		{"Huntsville", 34.73, -86.59, seedPlaceCity, 0}, {"Mobile", 30.69, -88.04, seedPlaceCity, 0},
		{"Tuscaloosa", 33.21, -87.57, seedPlaceCity, 0}, {"Auburn", 32.61, -85.48, seedPlaceTown, 0},
		{"Florence", 34.80, -87.68, seedPlaceTown, 0},
	}},
	{"AK", 8, 0.85, []seedCity{
		{"Anchorage", 61.22, -149.90, seedPlaceCity, 0}, {"Fairbanks", 64.84, -147.72, seedPlaceTown, 0},
		{"Juneau", 58.30, -134.42, seedPlaceTown, 4}, {"Wasilla", 61.58, -149.44, seedPlaceTown, 0},
	}},
	{"AZ", 105, 1.10, []seedCity{
		{"Phoenix", 33.45, -112.07, seedPlaceMetro, 0}, {"Tucson", 32.22, -110.97, seedPlaceMetro, 0},
		{"Mesa", 33.42, -111.83, seedPlaceCity, 0}, {"Flagstaff", 35.20, -111.65, seedPlaceTown, 0},
		{"Yuma", 32.69, -114.63, seedPlaceTown, 0}, {"Prescott", 34.54, -112.47, seedPlaceTown, 0},
	}},
	{"AR", 88, 0.85, []seedCity{
		{"Little Rock", 34.75, -92.29, seedPlaceCity, 0}, {"Fayetteville", 36.06, -94.16, seedPlaceCity, 0},
		{"Fort Smith", 35.39, -94.40, seedPlaceCity, 0}, {"Jonesboro", 35.84, -90.70, seedPlaceTown, 0},
		{"Conway", 35.09, -92.44, seedPlaceTown, 0}, {"Pine Bluff", 34.23, -92.00, seedPlaceTown, 0},
	}},
	{"CA", 690, 0.95, []seedCity{
		{"Los Angeles", 34.05, -118.24, seedPlaceMetro, 0}, {"San Francisco", 37.77, -122.42, seedPlaceMetro, 8},
		{"San Diego", 32.72, -117.16, seedPlaceMetro, 0}, {"San Jose", 37.34, -121.89, seedPlaceMetro, 0},
		{"Sacramento", 38.58, -121.49, seedPlaceMetro, 0}, {"Oakland", 37.80, -122.27, seedPlaceMetro, 8},
		{"Fresno", 36.74, -119.79, seedPlaceCity, 0}, {"Riverside", 33.95, -117.40, seedPlaceCity, 0},
		{"Irvine", 33.68, -117.83, seedPlaceCity, 0}, {"Bakersfield", 35.37, -119.02, seedPlaceCity, 0},
		{"Santa Barbara", 34.42, -119.70, seedPlaceCity, 5}, {"Chico", 39.73, -121.84, seedPlaceTown, 0},
		{"Redding", 40.59, -122.39, seedPlaceTown, 0}, {"Eureka", 40.80, -124.16, seedPlaceTown, 4},
	}},
	{"CO", 100, 1.05, []seedCity{
		{"Denver", 39.74, -104.99, seedPlaceMetro, 0}, {"Colorado Springs", 38.83, -104.82, seedPlaceCity, 0},
		{"Boulder", 40.01, -105.27, seedPlaceCity, 0}, {"Fort Collins", 40.59, -105.08, seedPlaceCity, 0},
		{"Pueblo", 38.25, -104.61, seedPlaceTown, 0}, {"Grand Junction", 39.06, -108.55, seedPlaceTown, 0},
		{"Durango", 37.28, -107.88, seedPlaceTown, 0},
	}},
	{"CT", 78, 1.35, []seedCity{
		{"Hartford", 41.76, -72.67, seedPlaceCity, 0}, {"New Haven", 41.31, -72.92, seedPlaceCity, 0},
		{"Stamford", 41.05, -73.54, seedPlaceCity, 5}, {"Bridgeport", 41.19, -73.20, seedPlaceCity, 0},
		{"Storrs", 41.81, -72.25, seedPlaceTown, 0}, {"New London", 41.36, -72.10, seedPlaceTown, 0},
	}},
	{"DE", 20, 1.20, []seedCity{
		{"Wilmington", 39.74, -75.55, seedPlaceCity, 5}, {"Dover", 39.16, -75.52, seedPlaceTown, 0},
		{"Newark", 39.68, -75.75, seedPlaceTown, 3}, {"Georgetown", 38.69, -75.39, seedPlaceTown, 0},
	}},
	{"DC", 19, 0.75, []seedCity{
		{"Washington", 38.91, -77.03, seedPlaceMetro, 3},
	}},
	{"FL", 385, 0.60, []seedCity{
		{"Miami", 25.76, -80.19, seedPlaceMetro, 10}, {"Orlando", 28.54, -81.38, seedPlaceMetro, 0},
		{"Tampa", 27.95, -82.46, seedPlaceMetro, 0}, {"Jacksonville", 30.33, -81.66, seedPlaceMetro, 0},
		{"Fort Lauderdale", 26.12, -80.14, seedPlaceCity, 6}, {"Tallahassee", 30.44, -84.28, seedPlaceCity, 0},
		{"Gainesville", 29.65, -82.32, seedPlaceCity, 0}, {"Pensacola", 30.42, -87.22, seedPlaceCity, 0},
		{"Fort Myers", 26.64, -81.87, seedPlaceCity, 0}, {"Daytona Beach", 29.21, -81.02, seedPlaceTown, 0},
	}},
	{"GA", 170, 0.80, []seedCity{
		{"Atlanta", 33.75, -84.39, seedPlaceMetro, 0}, {"Savannah", 32.08, -81.09, seedPlaceCity, 0},
		{"Augusta", 33.47, -81.97, seedPlaceCity, 0}, {"Athens", 33.96, -83.38, seedPlaceCity, 0},
		{"Macon", 32.84, -83.63, seedPlaceCity, 0}, {"Columbus", 32.46, -84.99, seedPlaceCity, 0},
		{"Valdosta", 30.83, -83.28, seedPlaceTown, 0}, {"Carrollton", 33.58, -85.08, seedPlaceTown, 0},
	}},
	{"HI", 22, 1.00, []seedCity{
		{"Honolulu", 21.31, -157.86, seedPlaceCity, 5}, {"Hilo", 19.72, -155.08, seedPlaceTown, 3},
		{"Kahului", 20.89, -156.47, seedPlaceTown, 3}, {"Lihue", 21.98, -159.37, seedPlaceTown, 2},
	}},
	{"ID", 38, 0.75, []seedCity{
		{"Boise", 43.62, -116.20, seedPlaceCity, 0}, {"Nampa", 43.54, -116.56, seedPlaceTown, 0},
		{"Idaho Falls", 43.49, -112.03, seedPlaceTown, 0}, {"Pocatello", 42.87, -112.45, seedPlaceTown, 0},
		{"Moscow", 46.73, -117.00, seedPlaceTown, 0}, {"Coeur d'Alene", 47.68, -116.78, seedPlaceTown, 0},
		{"Twin Falls", 42.56, -114.46, seedPlaceTown, 0},
	}},
	{"IL", 250, 1.35, []seedCity{
		{"Chicago", 41.88, -87.63, seedPlaceMetro, 0}, {"Evanston", 42.05, -87.69, seedPlaceCity, 4},
		{"Springfield", 39.80, -89.64, seedPlaceCity, 0}, {"Peoria", 40.69, -89.59, seedPlaceCity, 0},
		{"Champaign", 40.12, -88.24, seedPlaceCity, 0}, {"Rockford", 42.27, -89.09, seedPlaceCity, 0},
		{"Normal", 40.51, -88.99, seedPlaceTown, 0}, {"Carbondale", 37.73, -89.22, seedPlaceTown, 0},
	}},
	{"IN", 125, 0.95, []seedCity{
		{"Indianapolis", 39.77, -86.16, seedPlaceMetro, 0}, {"Fort Wayne", 41.08, -85.14, seedPlaceCity, 0},
		{"South Bend", 41.68, -86.25, seedPlaceCity, 0}, {"Evansville", 37.97, -87.57, seedPlaceCity, 0},
		{"Bloomington", 39.17, -86.53, seedPlaceTown, 0}, {"West Lafayette", 40.43, -86.91, seedPlaceTown, 0},
		{"Muncie", 40.19, -85.39, seedPlaceTown, 0}, {"Terre Haute", 39.47, -87.41, seedPlaceTown, 0},
	}},
	{"IA", 80, 0.90, []seedCity{
		{"Des Moines", 41.59, -93.62, seedPlaceCity, 0}, {"Cedar Rapids", 41.98, -91.67, seedPlaceCity, 0},
		{"Davenport", 41.52, -90.58, seedPlaceCity, 0}, {"Sioux City", 42.50, -96.40, seedPlaceCity, 0},
		{"Iowa City", 41.66, -91.53, seedPlaceTown, 0}, {"Ames", 42.03, -93.62, seedPlaceTown, 0},
		{"Dubuque", 42.50, -90.66, seedPlaceTown, 0},
	}},
	{"KS", 75, 0.90, []seedCity{
		{"Wichita", 37.69, -97.34, seedPlaceCity, 0}, {"Kansas City", 39.11, -94.63, seedPlaceCity, 0},
		{"Topeka", 39.05, -95.68, seedPlaceCity, 0}, {"Lawrence", 38.97, -95.24, seedPlaceTown, 0},
		{"Manhattan", 39.18, -96.57, seedPlaceTown, 0}, {"Hays", 38.88, -99.33, seedPlaceTown, 0},
		{"Pittsburg", 37.41, -94.70, seedPlaceTown, 0},
	}},
	{"KY", 90, 1.10, []seedCity{
		{"Louisville", 38.25, -85.76, seedPlaceMetro, 0}, {"Lexington", 38.04, -84.50, seedPlaceCity, 0},
		{"Bowling Green", 36.99, -86.44, seedPlaceTown, 0}, {"Frankfort", 38.20, -84.87, seedPlaceTown, 0},
		{"Richmond", 37.75, -84.29, seedPlaceTown, 0}, {"Owensboro", 37.77, -87.11, seedPlaceTown, 0},
		{"Pikeville", 37.48, -82.52, seedPlaceTown, 0},
	}},
	{"LA", 125, 0.95, []seedCity{
		{"New Orleans", 29.95, -90.07, seedPlaceMetro, 8}, {"Baton Rouge", 30.45, -91.19, seedPlaceCity, 0},
		{"Shreveport", 32.53, -93.75, seedPlaceCity, 0}, {"Lafayette", 30.22, -92.02, seedPlaceCity, 0},
		{"Monroe", 32.51, -92.12, seedPlaceTown, 0}, {"Lake Charles", 30.23, -93.22, seedPlaceTown, 0},
		{"Hammond", 30.50, -90.46, seedPlaceTown, 0},
	}},
	{"ME", 37, 1.00, []seedCity{
		{"Portland", 43.66, -70.26, seedPlaceCity, 5}, {"Bangor", 44.80, -68.77, seedPlaceTown, 0},
		{"Orono", 44.88, -68.67, seedPlaceTown, 0}, {"Lewiston", 44.10, -70.21, seedPlaceTown, 0},
		{"Augusta", 44.31, -69.78, seedPlaceTown, 0}, {"Presque Isle", 46.68, -68.02, seedPlaceTown, 0},
	}},
	{"MD", 85, 0.95, []seedCity{
		{"Baltimore", 39.29, -76.61, seedPlaceMetro, 0}, {"College Park", 38.99, -76.94, seedPlaceCity, 4},
		{"Towson", 39.40, -76.60, seedPlaceCity, 4}, {"Frederick", 39.41, -77.41, seedPlaceCity, 0},
		{"Annapolis", 38.98, -76.49, seedPlaceTown, 3}, {"Salisbury", 38.36, -75.60, seedPlaceTown, 0},
		{"Frostburg", 39.66, -78.93, seedPlaceTown, 0},
	}},
	{"MA", 160, 1.35, []seedCity{
		{"Boston", 42.36, -71.06, seedPlaceMetro, 9}, {"Cambridge", 42.37, -71.11, seedPlaceCity, 3},
		{"Worcester", 42.26, -71.80, seedPlaceCity, 0}, {"Springfield", 42.10, -72.59, seedPlaceCity, 0},
		{"Lowell", 42.63, -71.32, seedPlaceCity, 0}, {"New Bedford", 41.64, -70.93, seedPlaceCity, 4},
		{"Amherst", 42.37, -72.52, seedPlaceTown, 0}, {"Pittsfield", 42.45, -73.25, seedPlaceTown, 0},
	}},
	{"MI", 170, 1.30, []seedCity{
		{"Detroit", 42.33, -83.05, seedPlaceMetro, 0}, {"Ann Arbor", 42.28, -83.74, seedPlaceCity, 0},
		{"Grand Rapids", 42.96, -85.67, seedPlaceCity, 0}, {"Lansing", 42.73, -84.56, seedPlaceCity, 0},
		{"Kalamazoo", 42.29, -85.59, seedPlaceCity, 0}, {"Flint", 43.01, -83.69, seedPlaceCity, 0},
		{"Mount Pleasant", 43.60, -84.77, seedPlaceTown, 0}, {"Traverse City", 44.76, -85.62, seedPlaceTown, 0},
		{"Marquette", 46.55, -87.40, seedPlaceTown, 0},
	}},
	{"MN", 115, 1.15, []seedCity{
		{"Minneapolis", 44.98, -93.27, seedPlaceMetro, 0}, {"Saint Paul", 44.95, -93.09, seedPlaceCity, 0},
		{"Duluth", 46.79, -92.10, seedPlaceCity, 0}, {"Rochester", 44.02, -92.47, seedPlaceCity, 0},
		{"St. Cloud", 45.56, -94.16, seedPlaceTown, 0}, {"Mankato", 44.16, -94.00, seedPlaceTown, 0},
		{"Moorhead", 46.87, -96.77, seedPlaceTown, 0}, {"Winona", 44.05, -91.64, seedPlaceTown, 0},
	}},
	{"MS", 60, 0.85, []seedCity{
		{"Jackson", 32.30, -90.18, seedPlaceCity, 0}, {"Gulfport", 30.37, -89.09, seedPlaceCity, 4},
		{"Hattiesburg", 31.33, -89.29, seedPlaceTown, 0}, {"Oxford", 34.37, -89.52, seedPlaceTown, 0},
		{"Starkville", 33.45, -88.82, seedPlaceTown, 0}, {"Tupelo", 34.26, -88.70, seedPlaceTown, 0},
		{"Meridian", 32.36, -88.70, seedPlaceTown, 0},
	}},
	{"MO", 150, 0.90, []seedCity{
		{"St. Louis", 38.63, -90.20, seedPlaceMetro, 0}, {"Kansas City", 39.10, -94.58, seedPlaceMetro, 0},
		{"Springfield", 37.21, -93.29, seedPlaceCity, 0}, {"Columbia", 38.95, -92.33, seedPlaceCity, 0},
		{"Cape Girardeau", 37.31, -89.52, seedPlaceTown, 0}, {"Joplin", 37.08, -94.51, seedPlaceTown, 0},
		{"Kirksville", 40.19, -92.58, seedPlaceTown, 0}, {"Jefferson City", 38.58, -92.17, seedPlaceTown, 0},
	}},
	{"MT", 32, 0.75, []seedCity{
		{"Billings", 45.78, -108.50, seedPlaceCity, 0}, {"Missoula", 46.87, -113.99, seedPlaceTown, 0},
		{"Bozeman", 45.68, -111.04, seedPlaceTown, 0}, {"Great Falls", 47.50, -111.30, seedPlaceTown, 0},
		{"Helena", 46.59, -112.04, seedPlaceTown, 0}, {"Butte", 46.00, -112.53, seedPlaceTown, 0},
		{"Havre", 48.55, -109.68, seedPlaceTown, 0},
	}},
	{"NE", 45, 0.80, []seedCity{
		{"Omaha", 41.26, -95.94, seedPlaceMetro, 0}, {"Lincoln", 40.81, -96.70, seedPlaceCity, 0},
		{"Kearney", 40.70, -99.08, seedPlaceTown, 0}, {"Grand Island", 40.92, -98.34, seedPlaceTown, 0},
		{"Norfolk", 42.03, -97.42, seedPlaceTown, 0}, {"Scottsbluff", 41.87, -103.67, seedPlaceTown, 0},
	}},
	{"NV", 40, 0.70, []seedCity{
		{"Las Vegas", 36.17, -115.14, seedPlaceMetro, 0}, {"Henderson", 36.04, -114.98, seedPlaceCity, 0},
		{"Reno", 39.53, -119.81, seedPlaceCity, 0}, {"Carson City", 39.16, -119.77, seedPlaceTown, 0},
		{"Elko", 40.83, -115.76, seedPlaceTown, 0},
	}},
	{"NH", 35, 1.55, []seedCity{
		{"Manchester", 42.99, -71.46, seedPlaceCity, 0}, {"Nashua", 42.77, -71.47, seedPlaceCity, 0},
		{"Concord", 43.21, -71.54, seedPlaceTown, 0}, {"Durham", 43.13, -70.93, seedPlaceTown, 0},
		{"Keene", 42.93, -72.28, seedPlaceTown, 0}, {"Plymouth", 43.76, -71.69, seedPlaceTown, 0},
		{"Hanover", 43.70, -72.29, seedPlaceTown, 0},
	}},
	{"NJ", 160, 1.45, []seedCity{
		{"Newark", 40.74, -74.17, seedPlaceMetro, 6}, {"Jersey City", 40.73, -74.08, seedPlaceCity, 3},
		{"New Brunswick", 40.49, -74.45, seedPlaceCity, 0}, {"Trenton", 40.22, -74.76, seedPlaceCity, 0},
		{"Camden", 39.93, -75.12, seedPlaceCity, 4}, {"Paterson", 40.92, -74.17, seedPlaceCity, 0},
		{"Montclair", 40.81, -74.21, seedPlaceCity, 3}, {"Atlantic City", 39.36, -74.42, seedPlaceCity, 4},
		{"Princeton", 40.36, -74.67, seedPlaceTown, 0},
	}},
	{"NM", 45, 0.70, []seedCity{
		{"Albuquerque", 35.08, -106.65, seedPlaceMetro, 0}, {"Las Cruces", 32.32, -106.76, seedPlaceCity, 0},
		{"Santa Fe", 35.69, -105.94, seedPlaceTown, 0}, {"Roswell", 33.39, -104.52, seedPlaceTown, 0},
		{"Farmington", 36.73, -108.22, seedPlaceTown, 0}, {"Portales", 34.19, -103.33, seedPlaceTown, 0},
		{"Silver City", 32.77, -108.28, seedPlaceTown, 0},
	}},
	{"NY", 440, 0.80, []seedCity{
		{"New York", 40.75, -73.98, seedPlaceMetro, 4}, {"Brooklyn", 40.66, -73.95, seedPlaceMetro, 4},
		{"Hempstead", 40.71, -73.62, seedPlaceCity, 6}, {"Buffalo", 42.89, -78.88, seedPlaceCity, 0},
		{"Rochester", 43.16, -77.61, seedPlaceCity, 0}, {"Albany", 42.65, -73.76, seedPlaceCity, 0},
		{"Syracuse", 43.05, -76.15, seedPlaceCity, 0}, {"Binghamton", 42.10, -75.91, seedPlaceCity, 0},
		{"Poughkeepsie", 41.70, -73.92, seedPlaceCity, 0}, {"Ithaca", 42.44, -76.50, seedPlaceTown, 0},
		{"Plattsburgh", 44.70, -73.45, seedPlaceTown, 0}, {"Oswego", 43.46, -76.51, seedPlaceTown, 0},
	}},
	{"NC", 180, 0.75, []seedCity{
		{"Charlotte", 35.23, -80.84, seedPlaceMetro, 0}, {"Raleigh", 35.78, -78.64, seedPlaceMetro, 0},
		{"Durham", 35.99, -78.90, seedPlaceCity, 0}, {"Greensboro", 36.07, -79.79, seedPlaceCity, 0},
		{"Asheville", 35.60, -82.55, seedPlaceCity, 0}, {"Wilmington", 34.23, -77.94, seedPlaceCity, 0},
		{"Greenville", 35.61, -77.37, seedPlaceCity, 0}, {"Fayetteville", 35.05, -78.88, seedPlaceCity, 0},
		{"Chapel Hill", 35.91, -79.06, seedPlaceTown, 0}, {"Boone", 36.22, -81.67, seedPlaceTown, 0},
	}},
	{"ND", 25, 0.85, []seedCity{
		{"Fargo", 46.88, -96.79, seedPlaceCity, 0}, {"Bismarck", 46.81, -100.78, seedPlaceTown, 0},
		{"Grand Forks", 47.93, -97.03, seedPlaceTown, 0}, {"Minot", 48.23, -101.30, seedPlaceTown, 0},
		{"Dickinson", 46.88, -102.79, seedPlaceTown, 0}, {"Jamestown", 46.91, -98.71, seedPlaceTown, 0},
	}},
	{"OH", 290, 1.10, []seedCity{
		{"Columbus", 39.96, -83.00, seedPlaceMetro, 0}, {"Cleveland", 41.50, -81.69, seedPlaceMetro, 0},
		{"Cincinnati", 39.10, -84.51, seedPlaceMetro, 0}, {"Toledo", 41.65, -83.54, seedPlaceCity, 0},
		{"Akron", 41.08, -81.52, seedPlaceCity, 0}, {"Dayton", 39.76, -84.19, seedPlaceCity, 0},
		{"Youngstown", 41.10, -80.65, seedPlaceCity, 0}, {"Athens", 39.33, -82.10, seedPlaceTown, 0},
		{"Oxford", 39.51, -84.75, seedPlaceTown, 0}, {"Kent", 41.15, -81.36, seedPlaceTown, 0},
	}},
	{"OK", 110, 0.85, []seedCity{
		{"Oklahoma City", 35.47, -97.52, seedPlaceMetro, 0}, {"Tulsa", 36.15, -95.99, seedPlaceMetro, 0},
		{"Norman", 35.22, -97.44, seedPlaceCity, 0}, {"Edmond", 35.65, -97.48, seedPlaceCity, 0},
		{"Stillwater", 36.12, -97.06, seedPlaceTown, 0}, {"Lawton", 34.60, -98.39, seedPlaceTown, 0},
		{"Tahlequah", 35.92, -94.97, seedPlaceTown, 0}, {"Durant", 33.99, -96.37, seedPlaceTown, 0},
	}},
	{"OR", 70, 1.10, []seedCity{
		{"Portland", 45.52, -122.68, seedPlaceMetro, 0}, {"Eugene", 44.05, -123.09, seedPlaceCity, 0},
		{"Salem", 44.94, -123.04, seedPlaceCity, 0}, {"Corvallis", 44.56, -123.26, seedPlaceTown, 0},
		{"Bend", 44.06, -121.32, seedPlaceTown, 0}, {"Medford", 42.33, -122.87, seedPlaceTown, 0},
		{"La Grande", 45.32, -118.09, seedPlaceTown, 0}, {"Klamath Falls", 42.22, -121.78, seedPlaceTown, 0},
	}},
	{"PA", 350, 1.50, []seedCity{
		{"Philadelphia", 39.95, -75.17, seedPlaceMetro, 0}, {"Pittsburgh", 40.44, -80.00, seedPlaceMetro, 0},
		{"Harrisburg", 40.27, -76.88, seedPlaceCity, 0}, {"Allentown", 40.60, -75.49, seedPlaceCity, 0},
		{"Erie", 42.13, -80.09, seedPlaceCity, 4}, {"Scranton", 41.41, -75.66, seedPlaceCity, 0},
		{"Lancaster", 40.04, -76.31, seedPlaceCity, 0}, {"Reading", 40.34, -75.93, seedPlaceCity, 0},
		{"State College", 40.79, -77.86, seedPlaceTown, 0}, {"Indiana", 40.62, -79.15, seedPlaceTown, 0},
		{"Bloomsburg", 41.00, -76.45, seedPlaceTown, 0}, {"Williamsport", 41.24, -77.00, seedPlaceTown, 0},
	}},
	{"RI", 20, 1.20, []seedCity{
		{"Providence", 41.82, -71.41, seedPlaceCity, 4}, {"Warwick", 41.70, -71.42, seedPlaceCity, 3},
		{"Kingston", 41.48, -71.52, seedPlaceTown, 3}, {"Newport", 41.49, -71.31, seedPlaceTown, 2},
		{"Smithfield", 41.92, -71.55, seedPlaceTown, 3},
	}},
	{"SC", 95, 1.25, []seedCity{
		{"Columbia", 34.00, -81.03, seedPlaceCity, 0}, {"Charleston", 32.78, -79.93, seedPlaceCity, 5},
		{"Greenville", 34.85, -82.40, seedPlaceCity, 0}, {"Spartanburg", 34.95, -81.93, seedPlaceCity, 0},
		{"Rock Hill", 34.92, -81.03, seedPlaceCity, 0}, {"Clemson", 34.68, -82.84, seedPlaceTown, 0},
		{"Florence", 34.20, -79.76, seedPlaceTown, 0}, {"Orangeburg", 33.49, -80.86, seedPlaceTown, 0},
		{"Myrtle Beach", 33.69, -78.89, seedPlaceTown, 3},
	}},
	{"SD", 27, 0.85, []seedCity{
		{"Sioux Falls", 43.55, -96.73, seedPlaceCity, 0}, {"Rapid City", 44.08, -103.23, seedPlaceTown, 0},
		{"Brookings", 44.31, -96.80, seedPlaceTown, 0}, {"Vermillion", 42.78, -96.93, seedPlaceTown, 0},
		{"Aberdeen", 45.46, -98.49, seedPlaceTown, 0}, {"Spearfish", 44.49, -103.86, seedPlaceTown, 0},
		{"Mitchell", 43.71, -98.03, seedPlaceTown, 0},
	}},
	{"TN", 150, 0.95, []seedCity{
		{"Nashville", 36.16, -86.78, seedPlaceMetro, 0}, {"Memphis", 35.15, -90.05, seedPlaceMetro, 0},
		{"Knoxville", 35.96, -83.92, seedPlaceCity, 0}, {"Chattanooga", 35.05, -85.31, seedPlaceCity, 0},
		{"Murfreesboro", 35.85, -86.39, seedPlaceCity, 0}, {"Clarksville", 36.53, -87.36, seedPlaceCity, 0},
		{"Johnson City", 36.31, -82.35, seedPlaceCity, 0}, {"Cookeville", 36.16, -85.50, seedPlaceTown, 0},
		{"Martin", 36.34, -88.85, seedPlaceTown, 0},
	}},
	{"TX", 420, 1.00, []seedCity{
		{"Houston", 29.76, -95.37, seedPlaceMetro, 0}, {"Dallas", 32.78, -96.80, seedPlaceMetro, 0},
		{"San Antonio", 29.42, -98.49, seedPlaceMetro, 0}, {"Austin", 30.27, -97.74, seedPlaceMetro, 0},
		{"Fort Worth", 32.76, -97.33, seedPlaceMetro, 0}, {"El Paso", 31.76, -106.49, seedPlaceCity, 5},
		{"Lubbock", 33.58, -101.86, seedPlaceCity, 0}, {"Corpus Christi", 27.80, -97.40, seedPlaceCity, 5},
		{"Waco", 31.55, -97.15, seedPlaceCity, 0}, {"Denton", 33.21, -97.13, seedPlaceCity, 0},
		{"Edinburg", 26.30, -98.16, seedPlaceCity, 0}, {"Amarillo", 35.22, -101.83, seedPlaceCity, 0},
		{"Abilene", 32.45, -99.73, seedPlaceCity, 0}, {"Tyler", 32.35, -95.30, seedPlaceCity, 0},
		{"Beaumont", 30.08, -94.13, seedPlaceCity, 0}, {"College Station", 30.63, -96.33, seedPlaceTown, 0},
		{"Nacogdoches", 31.60, -94.66, seedPlaceTown, 0}, {"San Marcos", 29.88, -97.94, seedPlaceTown, 0},
	}},
	{"UT", 70, 0.70, []seedCity{
		{"Salt Lake City", 40.76, -111.89, seedPlaceMetro, 0}, {"Provo", 40.23, -111.66, seedPlaceCity, 0},
		{"Orem", 40.30, -111.69, seedPlaceCity, 0}, {"Ogden", 41.22, -111.97, seedPlaceCity, 0},
		{"Logan", 41.74, -111.83, seedPlaceTown, 0}, {"St. George", 37.10, -113.58, seedPlaceTown, 0},
		{"Cedar City", 37.68, -113.06, seedPlaceTown, 0},
	}},
	{"VT", 20, 1.60, []seedCity{
		{"Burlington", 44.48, -73.21, seedPlaceCity, 0}, {"Montpelier", 44.26, -72.58, seedPlaceTown, 0},
		{"Middlebury", 44.02, -73.17, seedPlaceTown, 0}, {"Rutland", 43.61, -72.97, seedPlaceTown, 0},
		{"Castleton", 43.61, -73.18, seedPlaceTown, 0}, {"Bennington", 42.88, -73.20, seedPlaceTown, 0},
		{"Johnson", 44.64, -72.68, seedPlaceTown, 0},
	}},
	{"VA", 160, 1.30, []seedCity{
		{"Richmond", 37.54, -77.44, seedPlaceMetro, 0}, {"Virginia Beach", 36.85, -75.98, seedPlaceMetro, 6},
		{"Norfolk", 36.85, -76.29, seedPlaceCity, 4}, {"Arlington", 38.88, -77.10, seedPlaceCity, 3},
		{"Fairfax", 38.85, -77.31, seedPlaceCity, 0}, {"Lynchburg", 37.41, -79.14, seedPlaceCity, 0},
		{"Roanoke", 37.27, -79.94, seedPlaceCity, 0}, {"Charlottesville", 38.03, -78.48, seedPlaceTown, 0},
		{"Blacksburg", 37.23, -80.41, seedPlaceTown, 0}, {"Harrisonburg", 38.45, -78.87, seedPlaceTown, 0},
		{"Williamsburg", 37.27, -76.71, seedPlaceTown, 0},
	}},
	{"WA", 110, 1.00, []seedCity{
		{"Seattle", 47.61, -122.33, seedPlaceMetro, 8}, {"Spokane", 47.66, -117.43, seedPlaceCity, 0},
		{"Tacoma", 47.25, -122.44, seedPlaceCity, 5}, {"Everett", 47.98, -122.20, seedPlaceCity, 4},
		{"Vancouver", 45.64, -122.66, seedPlaceCity, 0}, {"Bellingham", 48.75, -122.48, seedPlaceCity, 4},
		{"Olympia", 47.04, -122.90, seedPlaceTown, 0}, {"Pullman", 46.73, -117.18, seedPlaceTown, 0},
		{"Yakima", 46.60, -120.51, seedPlaceTown, 0}, {"Ellensburg", 47.00, -120.55, seedPlaceTown, 0},
	}},
	{"WV", 65, 0.85, []seedCity{
		{"Charleston", 38.35, -81.63, seedPlaceCity, 0}, {"Huntington", 38.42, -82.45, seedPlaceCity, 0},
		{"Morgantown", 39.63, -79.96, seedPlaceTown, 0}, {"Wheeling", 40.06, -80.72, seedPlaceTown, 0},
		{"Beckley", 37.78, -81.19, seedPlaceTown, 0}, {"Parkersburg", 39.27, -81.56, seedPlaceTown, 0},
		{"Fairmont", 39.49, -80.14, seedPlaceTown, 0},
	}},
	{"WI", 95, 0.90, []seedCity{
		{"Milwaukee", 43.04, -87.91, seedPlaceMetro, 0}, {"Madison", 43.07, -89.40, seedPlaceCity, 0},
		{"Green Bay", 44.51, -88.02, seedPlaceCity, 0}, {"Eau Claire", 44.81, -91.50, seedPlaceTown, 0},
		{"La Crosse", 43.80, -91.24, seedPlaceTown, 0}, {"Oshkosh", 44.02, -88.54, seedPlaceTown, 0},
		{"Stevens Point", 44.52, -89.57, seedPlaceTown, 0}, {"Whitewater", 42.83, -88.73, seedPlaceTown, 0},
	}},
	{"WY", 11, 0.55, []seedCity{
		{"Cheyenne", 41.14, -104.82, seedPlaceTown, 0}, {"Laramie", 41.31, -105.59, seedPlaceTown, 0},
		{"Casper", 42.87, -106.31, seedPlaceTown, 0}, {"Sheridan", 44.80, -106.96, seedPlaceTown, 0},
		{"Rock Springs", 41.59, -109.20, seedPlaceTown, 0}, {"Riverton", 43.02, -108.38, seedPlaceTown, 0},
	}},
}
