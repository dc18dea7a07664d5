-- tilebake's OpenMapTiles profile for tilemaker 2.2 (Debian bookworm): OSM tags -> the OpenMapTiles
-- vector tile schema (https://openmaptiles.org/schema/) as far as the osm-bright and positron styles use it.
-- Lua 5.1 and tilemaker 2.2's object API (obj:Find, obj:Layer, obj:Attribute(key, value[, minzoom]), ...).
--
-- Attributes whose names start with "_" are instructions for tilebake's post-processing step
-- (pipeline/osm/canonical.ts), which removes them:
--   _zorder      draw order within a layer (tilemaker orders features by ZOrder, then by memory
--                address, which differs run to run; the post-processing sorts by it again)
--   _rank_order  importance (lower first) for `rank` = position within a label grid cell, which
--                OpenMapTiles computes per tile and tilemaker cannot

-- Web Mercator metres per pixel at zoom 0 (256 px tiles).
local Z0_RESOLUTION = 156543.03

-- Metres per building level (OpenMapTiles).
local LEVEL_HEIGHT = 3.66

-- Name languages written as name:xx besides name, name_en, name_de, name_int, name:latin, name:nonlatin:
-- the tileset's "languages" (pipeline/osm/tilemaker.ts passes them, comma-separated; lib/languages.ts).
local NAME_LANGUAGES = {}
do
  local list = os.getenv("TILEBAKE_NAME_LANGUAGES")
  if list == nil then error("TILEBAKE_NAME_LANGUAGES is not set (the tileset's name:xx languages)") end
  for code in string.gmatch(list, "[^,]+") do NAME_LANGUAGES[#NAME_LANGUAGES + 1] = code end
end

local function Set(list)
  local set = {}
  for _, v in ipairs(list) do set[v] = true end
  return set
end

local function clampZoom(z)
  if z < 0 then return 0 end
  if z > 14 then return 14 end
  return z
end

-- Lowest zoom at which an area of `area` m^2 spans `px` pixels across (square-equivalent), at least `floor`.
local function minZoomForArea(area, px, floor)
  if area <= 0 then return 14 end
  local z = math.ceil(math.log(Z0_RESOLUTION * px / math.sqrt(area)) / math.log(2))
  if z < floor then z = floor end
  return clampZoom(z)
end

-- True when every character of `s` is Latin script, ASCII, combining marks or general punctuation.
local function isLatin(s)
  local i, n = 1, #s
  while i <= n do
    local c = s:byte(i)
    local cp, len
    if c < 0x80 then cp, len = c, 1
    elseif c < 0xE0 then cp, len = (c % 0x20) * 64 + (s:byte(i + 1) or 0) % 64, 2
    elseif c < 0xF0 then cp, len = (c % 0x10) * 4096 + ((s:byte(i + 1) or 0) % 64) * 64 + (s:byte(i + 2) or 0) % 64, 3
    else cp, len = 0x10000, 4 end
    if not (cp < 0x250 or (cp >= 0x300 and cp < 0x370) or (cp >= 0x1E00 and cp < 0x1F00) or (cp >= 0x2000 and cp < 0x2070)) then
      return false
    end
    i = i + len
  end
  return true
end

-- Name fields. name:latin is the name in Latin script (name:latin, int_name or name:en when the name is
-- not Latin: tilemaker has no transliteration), name:nonlatin the name when it is not Latin.
local function SetNames(obj)
  local name = obj:Find("name")
  if name == "" then return end
  local en, de = obj:Find("name:en"), obj:Find("name:de")
  obj:Attribute("name", name)
  obj:Attribute("name_en", en ~= "" and en or name)
  obj:Attribute("name_de", de ~= "" and de or name)
  local latin = name
  if not isLatin(name) then
    obj:Attribute("name:nonlatin", name)
    latin = nil
    for _, k in ipairs({ "name:latin", "int_name", "name:en" }) do
      local v = obj:Find(k)
      if v ~= "" and isLatin(v) then latin = v; break end
    end
  end
  if latin then obj:Attribute("name:latin", latin) end
  local int = obj:Find("int_name")
  obj:Attribute("name_int", int ~= "" and int or (latin or name))
  for _, lang in ipairs(NAME_LANGUAGES) do
    local v = obj:Find("name:" .. lang)
    if v ~= "" then obj:Attribute("name:" .. lang, v) end
  end
end

local function SetBrunnel(obj)
  local bridge, tunnel = obj:Find("bridge"), obj:Find("tunnel")
  if bridge ~= "" and bridge ~= "no" then obj:Attribute("brunnel", "bridge")
  elseif (tunnel ~= "" and tunnel ~= "no") or obj:Find("covered") == "yes" then obj:Attribute("brunnel", "tunnel")
  elseif obj:Find("ford") == "yes" then obj:Attribute("brunnel", "ford") end
end

local function SetIntermittent(obj)
  obj:AttributeNumeric("intermittent", obj:Find("intermittent") == "yes" and 1 or 0)
end

-- Leading integer of a tag ("12 m" -> 12), or nil.
local function leadingNumber(v)
  local n = string.match(v or "", "^%s*(-?%d+%.?%d*)")
  return n and tonumber(n) or nil
end

local function SetEle(obj)
  local ele = leadingNumber(obj:Find("ele"))
  if ele then
    obj:AttributeNumeric("ele", math.floor(ele + 0.5))
    obj:AttributeNumeric("ele_ft", math.floor(ele * 3.2808399 + 0.5))
  end
end

---------------------------------------------------------------------------------------------------
-- place

local PLACE_MINZOOM = { continent = 0, country = 0, state = 4, province = 4, city = 4, town = 7, village = 10,
  hamlet = 12, suburb = 11, quarter = 12, neighbourhood = 13, isolated_dwelling = 13, island = 10, borough = 11 }

-- Country and city ranks approximated from population (OpenMapTiles takes them from Natural Earth).
local function cityRank(pop)
  local limits = { 8000000, 4000000, 2000000, 1000000, 500000, 250000, 150000, 100000, 50000 }
  for i, limit in ipairs(limits) do if pop >= limit then return i end end
  return nil
end

local function capitalLevel(v)
  if v == "yes" then return 2 end
  local n = tonumber(v)
  if n and n >= 2 and n <= 6 then return n end
  return nil
end

-- OpenMapTiles' country ranks from Natural Earth by ISO code, "AT:2,CH:2,…" (pipeline/osm/natural-earth.ts).
local COUNTRY_RANK = {}
for iso, rank in string.gmatch(os.getenv("TILEBAKE_COUNTRY_RANKS") or "", "(%u%u):(%d)") do COUNTRY_RANK[iso] = tonumber(rank) end

local function countryCode(obj)
  for _, k in ipairs({ "country_code_iso3166_1_alpha_2", "ISO3166-1:alpha2", "ISO3166-1" }) do
    local v = obj:Find(k)
    if v ~= "" then return v end
  end
  return ""
end

local function WritePlace(obj, place)
  local mz = PLACE_MINZOOM[place]
  if not mz then return false end
  if obj:Find("name") == "" then return true end
  local pop = leadingNumber(obj:Find("population")) or 0
  local capital = capitalLevel(obj:Find("capital"))
  if place == "city" or place == "town" then
    if capital == 2 then mz = math.min(mz, 3) end
  end
  local iso = place == "country" and countryCode(obj) or ""
  -- Natural Earth's rank, else one from the population (countries too small for NE's 110 m table).
  local countryRank = COUNTRY_RANK[iso] or (pop > 50000000 and 1 or (pop > 20000000 and 2 or 3))
  -- OpenMapTiles shows a country from the zoom where its rank <= zoom + 1.
  if place == "country" then mz = countryRank - 1 end
  obj:Layer("place", false)
  obj:MinZoom(mz)
  obj:Attribute("class", place)
  SetNames(obj)
  if capital then obj:AttributeNumeric("capital", capital) end
  if place == "country" then
    if iso ~= "" then obj:Attribute("iso_a2", iso) end
    obj:AttributeNumeric("rank", countryRank)
  elseif place == "state" or place == "province" then
    obj:AttributeNumeric("rank", pop > 5000000 and 2 or 4)
  elseif place == "city" or place == "town" or place == "village" or place == "hamlet" or place == "suburb"
      or place == "quarter" or place == "neighbourhood" or place == "isolated_dwelling" or place == "borough" then
    local rank = place == "city" and cityRank(pop) or nil
    if rank then obj:AttributeNumeric("rank", rank)
    else
      -- 10 + position in a 128 px grid cell, by place class then population (as OpenMapTiles).
      local order = { city = 1, town = 2, village = 3, hamlet = 4, suburb = 5, quarter = 6, neighbourhood = 7, isolated_dwelling = 8, borough = 5 }
      obj:AttributeNumeric("_rank_order", order[place] * 1000 - math.min(999, math.floor(math.sqrt(pop) / 10)))
    end
  end
  return true
end

---------------------------------------------------------------------------------------------------
-- poi

local POI_TAGS = {
  aerialway = Set { "station" },
  amenity = Set { "arts_centre", "atm", "bank", "bar", "bbq", "bicycle_parking", "bicycle_rental", "biergarten", "bus_station",
    "cafe", "charging_station", "cinema", "clinic", "college", "community_centre", "courthouse", "dentist", "doctors",
    "drinking_water", "fast_food", "ferry_terminal", "fire_station", "food_court", "fuel", "grave_yard", "hospital",
    "ice_cream", "kindergarten", "library", "marketplace", "motorcycle_parking", "nightclub", "nursing_home", "parking",
    "pharmacy", "place_of_worship", "police", "parcel_locker", "post_box", "post_office", "prison", "pub", "public_building",
    "recycling", "restaurant", "school", "shelter", "swimming_pool", "taxi", "telephone", "theatre", "toilets", "townhall",
    "university", "veterinary", "waste_basket" },
  barrier = Set { "bollard", "border_control", "cycle_barrier", "gate", "lift_gate", "sally_port", "stile", "toll_booth" },
  building = Set { "dormitory" },
  highway = Set { "bus_stop" },
  historic = Set { "monument", "castle", "ruins" },
  landuse = Set { "basin", "brownfield", "cemetery", "reservoir", "winter_sports" },
  leisure = Set { "dog_park", "escape_game", "garden", "golf_course", "ice_rink", "hackerspace", "marina", "miniature_golf",
    "park", "pitch", "playground", "sports_centre", "stadium", "swimming_area", "swimming_pool", "water_park" },
  office = true,
  railway = Set { "halt", "station", "subway_entrance", "train_station_entrance", "tram_stop" },
  shop = true,
  sport = true,
  tourism = Set { "alpine_hut", "aquarium", "artwork", "attraction", "bed_and_breakfast", "camp_site", "caravan_site", "chalet",
    "gallery", "guest_house", "hostel", "hotel", "information", "motel", "museum", "picnic_site", "theme_park", "viewpoint", "zoo" },
  waterway = Set { "dock" },
  zoo = true,
}
-- The order keys are tried in when an object has several.
local POI_KEYS = { "amenity", "railway", "aerialway", "tourism", "shop", "office", "leisure", "historic", "highway", "landuse",
  "waterway", "building", "barrier", "sport", "zoo" }

local POI_SHOP_CLASS = Set { "accessories", "antiques", "beauty", "bed", "boutique", "camera", "carpet", "charity", "chemist",
  "chocolate", "coffee", "computer", "convenience", "confectionery", "copyshop", "cosmetics", "garden_centre", "doityourself",
  "erotic", "electronics", "fabric", "florist", "frozen_food", "furniture", "video_games", "video", "general", "gift",
  "hardware", "hearing_aids", "hifi", "interior_decoration", "jewelry", "kiosk", "locksmith", "lamps", "mall", "massage",
  "motorcycle", "mobile_phone", "newsagent", "optician", "outdoor", "paint", "perfumery", "perfume", "pet", "photo",
  "second_hand", "shoes", "sports", "stationery", "tailor", "tattoo", "ticket", "tobacco", "toys", "travel_agency",
  "watches", "weapons", "wholesale" }

local POI_CLASS = {
  townhall = "town_hall", public_building = "town_hall", courthouse = "town_hall", community_centre = "town_hall",
  golf = "golf", golf_course = "golf", miniature_golf = "golf",
  fast_food = "fast_food", food_court = "fast_food",
  park = "park", bbq = "park",
  bus_stop = "bus", bus_station = "bus",
  halt = "railway", tram_stop = "railway", subway = "railway",
  subway_entrance = "entrance", train_station_entrance = "entrance",
  camp_site = "campsite", caravan_site = "campsite",
  laundry = "laundry", dry_cleaning = "laundry",
  supermarket = "grocery", deli = "grocery", delicatessen = "grocery", department_store = "grocery", greengrocer = "grocery", marketplace = "grocery",
  books = "library", library = "library",
  university = "college", college = "college",
  hotel = "lodging", motel = "lodging", bed_and_breakfast = "lodging", guest_house = "lodging", hostel = "lodging",
  chalet = "lodging", alpine_hut = "lodging", dormitory = "lodging",
  ice_cream = "ice_cream",
  post_box = "post", post_office = "post", parcel_locker = "post",
  cafe = "cafe",
  school = "school", kindergarten = "school",
  alcohol = "alcohol_shop", beverages = "alcohol_shop", wine = "alcohol_shop",
  bar = "bar", nightclub = "bar",
  marina = "harbor", dock = "harbor",
  car = "car", car_repair = "car", car_parts = "car", taxi = "car",
  hospital = "hospital", nursing_home = "hospital", clinic = "hospital",
  grave_yard = "cemetery", cemetery = "cemetery",
  attraction = "attraction", viewpoint = "attraction",
  biergarten = "beer", pub = "beer",
  music = "music", musical_instrument = "music",
  american_football = "stadium", stadium = "stadium", soccer = "stadium",
  art = "art_gallery", artwork = "art_gallery", gallery = "art_gallery", arts_centre = "art_gallery",
  bag = "clothing_store", clothes = "clothing_store",
  swimming_area = "swimming", swimming = "swimming",
  castle = "castle", ruins = "castle",
  atm = "atm",
  fuel = "fuel", charging_station = "fuel",
  zoo = "zoo", enclosure = "zoo", petting_zoo = "zoo", aviary = "zoo", wildlife_park = "zoo", birds = "zoo",
  safari_park = "zoo", butterfly = "zoo", falconry = "zoo", reptile = "zoo", terrarium = "zoo",
}

-- OpenMapTiles' poi_class_rank: lower is more important.
local POI_CLASS_RANK = { hospital = 20, railway = 40, bus = 50, attraction = 70, harbor = 75, college = 80, school = 85,
  stadium = 90, zoo = 95, town_hall = 100, campsite = 110, cemetery = 115, park = 120, library = 130, police = 135,
  post = 140, golf = 150, shop = 400, grocery = 500, fast_food = 600, clothing_store = 700, bar = 800 }

-- The OSM key and value an object is a POI for, or nil.
local function poiTag(obj)
  for _, k in ipairs(POI_KEYS) do
    local v = obj:Find(k)
    if v ~= "" and v ~= "no" then
      local values = POI_TAGS[k]
      if values == true or values[v] then return k, v end
    end
  end
  return nil
end

local function poiClass(key, subclass)
  if key == "amenity" and subclass == "university" then return "college" end
  if key == "railway" and subclass == "station" then return "railway" end
  if key == "aerialway" and subclass == "station" then return "aerialway" end
  if key == "office" then return "office" end
  if key == "shop" and POI_SHOP_CLASS[subclass] then return "shop" end
  return POI_CLASS[subclass] or subclass
end

local function WritePoi(obj, asCentroid)
  local key, value = poiTag(obj)
  if not key then return end
  local class = poiClass(key, value)
  local subclass = value
  if value == "information" then subclass = obj:Find("information") ~= "" and obj:Find("information") or value
  elseif value == "place_of_worship" then subclass = obj:Find("religion") ~= "" and obj:Find("religion") or value
  elseif value == "pitch" then subclass = obj:Find("sport") ~= "" and obj:Find("sport") or value end
  if asCentroid then obj:LayerAsCentroid("poi") else obj:Layer("poi", false) end
  local station = (key == "railway" and (value == "station" or value == "halt")) or value == "ferry_terminal"
  obj:MinZoom(station and 12 or 14)
  SetNames(obj)
  obj:Attribute("class", class)
  obj:Attribute("subclass", subclass)
  local level = leadingNumber(obj:Find("level"))
  if level then obj:AttributeNumeric("level", level) end
  local layer = leadingNumber(obj:Find("layer"))
  if layer and layer ~= 0 then obj:AttributeNumeric("layer", layer) end
  if obj:Find("indoor") == "yes" then obj:AttributeNumeric("indoor", 1) end
  local order = obj:Find("name") == "" and 2000 or (POI_CLASS_RANK[class] or 1000)
  obj:AttributeNumeric("_rank_order", order)
end

---------------------------------------------------------------------------------------------------
-- nodes

node_keys = { "place", "natural", "aeroway", "addr:housenumber", "amenity", "shop", "tourism", "leisure", "historic",
  "office", "railway", "highway", "barrier", "sport", "aerialway", "landuse", "waterway", "building", "zoo" }

local AERODROME_CLASS = Set { "international", "public", "regional", "military", "private" }

local function WriteAerodromeLabel(obj, asCentroid)
  if asCentroid then obj:LayerAsCentroid("aerodrome_label") else obj:Layer("aerodrome_label", false) end
  local iata = obj:Find("iata")
  obj:MinZoom(iata ~= "" and 8 or 10)
  SetNames(obj)
  local a = obj:Find("aerodrome")
  if a == "" then a = obj:Find("aerodrome:type") end
  obj:Attribute("class", AERODROME_CLASS[a] and a or "other")
  if iata ~= "" then obj:Attribute("iata", iata) end
  local icao = obj:Find("icao")
  if icao ~= "" then obj:Attribute("icao", icao) end
  SetEle(obj)
end

-- "1;3" -> "1–3" (first and last of a list), as OpenMapTiles.
local function housenumber(v)
  if not string.find(v, ";", 1, true) then return v end
  local first = string.match(v, "^([^;]*)")
  local last = string.match(v, "([^;]*)$")
  return first .. "–" .. last
end

local PEAK_CLASS = Set { "peak", "volcano", "saddle", "ridge", "cliff", "arete" }

local function WritePeak(obj, natural)
  local ele = leadingNumber(obj:Find("ele"))
  local name = obj:Find("name")
  if not ele and name == "" then return end
  obj:Layer("mountain_peak", false)
  obj:MinZoom(ele and ele >= 3000 and 7 or (ele and ele >= 2000 and 9 or 11))
  obj:Attribute("class", natural)
  SetNames(obj)
  SetEle(obj)
  -- OpenMapTiles: higher first, +10000 each for a name and a Wikipedia article.
  local score = (ele or 0) + (name ~= "" and 10000 or 0) + (obj:Find("wikipedia") ~= "" and 10000 or 0)
  obj:AttributeNumeric("_rank_order", -score)
end

function node_function(node)
  local place = node:Find("place")
  if place ~= "" and WritePlace(node, place) then return end

  local hn = node:Find("addr:housenumber")
  if hn ~= "" then
    node:Layer("housenumber", false)
    node:Attribute("housenumber", housenumber(hn))
  end

  if node:Find("aeroway") == "aerodrome" then WriteAerodromeLabel(node, false) end
  if node:Find("aeroway") == "gate" then
    node:Layer("aeroway", false)
    node:MinZoom(14)
    node:Attribute("class", "gate")
    local ref = node:Find("ref")
    if ref ~= "" then node:Attribute("ref", ref) end
  end

  local natural = node:Find("natural")
  if PEAK_CLASS[natural] and natural ~= "ridge" and natural ~= "cliff" then WritePeak(node, natural) end
  if (natural == "bay" or natural == "strait" or place == "sea" or place == "ocean") and node:Find("name") ~= "" then
    node:Layer("water_name", false)
    local class = natural ~= "" and natural or place
    node:MinZoom(place == "ocean" and 0 or (place == "sea" and 3 or 8))
    node:Attribute("class", class)
    SetNames(node)
  end

  WritePoi(node, false)
end

---------------------------------------------------------------------------------------------------
-- ways and multipolygons

-- Boundary and road route relations are read from the ways that belong to them.
function relation_scan_function(relation)
  local t = relation:Find("type")
  if t == "boundary" and relation:Find("boundary") == "administrative" then relation:Accept() end
  if t == "route" and relation:Find("route") == "road" then relation:Accept() end
end

local HIGHWAY_CLASS = {
  motorway = "motorway", motorway_link = "motorway", trunk = "trunk", trunk_link = "trunk",
  primary = "primary", primary_link = "primary", secondary = "secondary", secondary_link = "secondary",
  tertiary = "tertiary", tertiary_link = "tertiary",
  unclassified = "minor", residential = "minor", living_street = "minor", road = "minor",
  pedestrian = "path", path = "path", footway = "path", cycleway = "path", steps = "path", bridleway = "path", corridor = "path",
  service = "service", track = "track", raceway = "raceway", busway = "busway", bus_guideway = "bus_guideway",
}
local CLASS_MINZOOM = { motorway = 4, trunk = 5, primary = 7, secondary = 9, tertiary = 11, minor = 12, service = 13,
  track = 13, path = 13, raceway = 12, busway = 12, bus_guideway = 12 }
local LINK_MINZOOM = { motorway = 9, trunk = 10, primary = 11, secondary = 12, tertiary = 12 }
local NAME_MINZOOM = { motorway = 8, trunk = 8, primary = 10, secondary = 11, tertiary = 12, minor = 13, service = 13,
  track = 13, path = 14, raceway = 13, busway = 13, bus_guideway = 13, rail = 13, transit = 13 }
local RAILWAY_CLASS = { rail = "rail", narrow_gauge = "rail", preserved = "rail", funicular = "rail",
  subway = "transit", light_rail = "transit", monorail = "transit", tram = "transit" }
local PAVED = Set { "paved", "asphalt", "cobblestone", "concrete", "concrete:lanes", "concrete:plates", "metal",
  "paving_stones", "sett", "unhewn_cobblestone", "wood", "grade1" }
local UNPAVED = Set { "unpaved", "compacted", "dirt", "earth", "fine_gravel", "grass", "grass_paver", "gravel",
  "gravel_turf", "ground", "ice", "mud", "pebblestone", "salt", "sand", "snow", "woodchips", "rock", "clay", "laterite" }
local SERVICE_VALUES = Set { "spur", "yard", "siding", "crossover", "driveway", "alley", "parking_aisle" }
local AREA_HIGHWAYS = Set { "pedestrian", "footway", "service", "platform", "living_street", "track" }

-- Imposm's way z-order: layer, bridges over tunnels, then the road class.
local ZORDER_CLASS = { motorway = 9, trunk = 8, primary = 6, secondary = 5, tertiary = 4 }
local function zOrder(way, highway)
  local z = (ZORDER_CLASS[highway] or 3)
  local layer = leadingNumber(way:Find("layer"))
  if layer then z = z + 10 * math.max(-7, math.min(7, layer)) end
  local bridge, tunnel = way:Find("bridge"), way:Find("tunnel")
  if bridge ~= "" and bridge ~= "no" then z = z + 10 elseif tunnel ~= "" and tunnel ~= "no" then z = z - 10 end
  return z
end

local ROAD_NETWORK = {
  ["US:I"] = "us-interstate", ["US:US"] = "us-highway", ["CA:transcanada"] = "ca-transcanada",
  ["CA:ON:primary"] = "ca-provincial-arterial", ["CA:QC:A"] = "ca-provincial-arterial",
  ["gb:motorway"] = "gb-motorway", ["gb:trunk"] = "gb-trunk", ["gb:primary"] = "gb-primary",
  ["ie:motorway"] = "ie-motorway", ["ie:national"] = "ie-national", ["ie:regional"] = "ie-regional",
}

-- The network of the first road route relation the way belongs to that has a known network.
local function roadNetwork(way, relationNetworks)
  for _, n in ipairs(relationNetworks) do
    if ROAD_NETWORK[n] then return ROAD_NETWORK[n] end
    if string.match(n, "^US:%a%a$") then return "us-state" end
  end
  return "road"
end

local function WriteTransportation(way, class, subclass, minzoom, isArea, highway, extra)
  way:Layer("transportation", isArea)
  way:MinZoom(minzoom)
  local z = zOrder(way, highway)
  way:ZOrder(z)
  way:AttributeNumeric("_zorder", z)
  way:Attribute("class", class)
  if subclass then way:Attribute("subclass", subclass) end
  SetBrunnel(way)
  local layer = leadingNumber(way:Find("layer"))
  if layer and layer ~= 0 then way:AttributeNumeric("layer", layer) end
  if extra then extra(way) end
end

local function highwayAttributes(way, highway, class)
  local oneway = way:Find("oneway")
  if oneway == "yes" or oneway == "1" or oneway == "true" then way:AttributeNumeric("oneway", 1)
  elseif oneway == "-1" or oneway == "reverse" then way:AttributeNumeric("oneway", -1) end
  if string.match(highway, "_link$") or highway == "steps" then way:AttributeNumeric("ramp", 1) end
  local service = way:Find("service")
  if (class == "service" or class == "rail") and SERVICE_VALUES[service] then way:Attribute("service", service) end
  local access = way:Find("access")
  if access == "no" or access == "private" then way:Attribute("access", "no") end
  if way:Find("toll") == "yes" then way:AttributeNumeric("toll", 1) end
  if way:Find("expressway") == "yes" then way:AttributeNumeric("expressway", 1) end
  local surface = way:Find("surface")
  if PAVED[surface] then way:Attribute("surface", "paved", 12) elseif UNPAVED[surface] then way:Attribute("surface", "unpaved", 12) end
  if class == "path" or class == "track" or class == "minor" or class == "service" then
    for _, k in ipairs({ "bicycle", "foot", "horse" }) do
      local v = way:Find(k)
      if v ~= "" then way:Attribute(k, v) end
    end
    local mtb = way:Find("mtb:scale")
    if mtb ~= "" then way:Attribute("mtb_scale", mtb) end
  end
  if class == "path" then
    local level = leadingNumber(way:Find("level"))
    if level then way:AttributeNumeric("level", level, 14) end
    if way:Find("indoor") == "yes" then way:AttributeNumeric("indoor", 1, 14) end
  end
end

local function WriteTransportationName(way, class, subclass, highway, minzoom, networks)
  local name, ref = way:Find("name"), way:Find("ref")
  if name == "" and ref == "" then return end
  way:Layer("transportation_name", false)
  way:MinZoom(minzoom)
  SetNames(way)
  way:Attribute("class", class)
  if subclass then way:Attribute("subclass", subclass) end
  if ref ~= "" then
    way:Attribute("ref", ref)
    way:AttributeNumeric("ref_length", string.len(ref))
    way:Attribute("network", roadNetwork(way, networks))
  end
  SetBrunnel(way)
  if class == "path" then
    local level = leadingNumber(way:Find("level"))
    if level then way:AttributeNumeric("level", level) end
    local layer = leadingNumber(way:Find("layer"))
    if layer and layer ~= 0 then way:AttributeNumeric("layer", layer) end
    if way:Find("indoor") == "yes" then way:AttributeNumeric("indoor", 1) end
  end
end

local function Roads(way, isClosed, networks)
  local highway = way:Find("highway")
  local publicTransport = way:Find("public_transport")
  local railway = way:Find("railway")
  local isArea = isClosed and way:Find("area") == "yes"
  local class, subclass, minzoom
  if highway == "construction" then
    local c = HIGHWAY_CLASS[way:Find("construction")] or "minor"
    class = c .. "_construction"
    minzoom = math.max(CLASS_MINZOOM[c] or 12, 11)
    if c == "path" then subclass = way:Find("construction") end
  elseif HIGHWAY_CLASS[highway] then
    class = HIGHWAY_CLASS[highway]
    minzoom = CLASS_MINZOOM[class]
    if string.match(highway, "_link$") then minzoom = LINK_MINZOOM[class] or minzoom end
    if class == "path" then subclass = highway end
    if class == "service" and (way:Find("service") == "driveway" or way:Find("service") == "parking_aisle") then minzoom = 14 end
    if class == "path" and (highway == "footway" or highway == "steps" or highway == "corridor") then minzoom = 14 end
  elseif publicTransport == "platform" or railway == "platform" or highway == "platform" then
    class, subclass, minzoom = "path", "platform", 14
  end
  if class then
    if isArea and not AREA_HIGHWAYS[highway] and subclass ~= "platform" then isArea = false end
    WriteTransportation(way, class, subclass, isArea and math.max(minzoom, 13) or minzoom, isArea, highway,
      function(w) highwayAttributes(w, highway, class) end)
    if not isArea then WriteTransportationName(way, class, subclass, highway, math.max(minzoom, NAME_MINZOOM[class] or minzoom), networks) end
    return
  end

  local rclass = RAILWAY_CLASS[railway]
  if rclass then
    local service = way:Find("service")
    local mz = rclass == "rail" and ((service ~= "" or way:Find("usage") == "industrial") and 13 or 8) or 11
    WriteTransportation(way, rclass, railway, mz, false, railway, function(w)
      if SERVICE_VALUES[service] then w:Attribute("service", service) end
    end)
    WriteTransportationName(way, rclass, railway, railway, 14, networks)
    return
  end

  local aerialway = way:Find("aerialway")
  if aerialway ~= "" and aerialway ~= "station" and aerialway ~= "pylon" then
    WriteTransportation(way, "aerialway", aerialway, 12, false, aerialway)
    WriteTransportationName(way, "aerialway", aerialway, aerialway, 14, networks)
    return
  end

  if way:Find("route") == "ferry" or way:Find("route") == "shipway" then
    WriteTransportation(way, "ferry", nil, 7, false, "ferry")
    WriteTransportationName(way, "ferry", nil, "ferry", 12, networks)
    return
  end

  if way:Find("man_made") == "pier" then
    WriteTransportation(way, "pier", nil, 13, isClosed, "pier")
    return
  end
  if way:Find("man_made") == "bridge" and isClosed then
    WriteTransportation(way, "bridge", nil, 13, true, "bridge")
  end
end

local function Boundaries(way, relations)
  local adminLevel = nil
  local boundary = way:Find("boundary")
  if boundary == "administrative" then adminLevel = leadingNumber(way:Find("admin_level")) end
  for _, r in ipairs(relations) do
    if r.admin and (not adminLevel or r.admin < adminLevel) then adminLevel = r.admin end
  end
  if not adminLevel or adminLevel < 2 or adminLevel > 10 then return end
  -- Country and state borders come from Natural Earth up to z6 (natural-earth.ts).
  local mz = adminLevel <= 6 and 7 or (adminLevel <= 8 and 10 or 12)
  way:Layer("boundary", false)
  way:MinZoom(mz)
  way:AttributeNumeric("admin_level", adminLevel)
  local disputed = way:Find("disputed") == "yes" or way:Find("boundary") == "disputed"
  way:AttributeNumeric("disputed", disputed and 1 or 0)
  local maritime = way:Find("maritime") == "yes" or way:Find("boundary_type") == "maritime" or way:Find("natural") == "coastline"
  way:AttributeNumeric("maritime", maritime and 1 or 0)
end

local WATER_RIVER = Set { "river", "stream", "canal", "ditch", "drain" }
local WATER_POND = Set { "pond", "basin", "wastewater", "salt_pond" }

local function Water(way, isClosed)
  local natural, waterway, landuse, leisure = way:Find("natural"), way:Find("waterway"), way:Find("landuse"), way:Find("leisure")
  local water = way:Find("water")
  local class
  if waterway == "dock" then class = "dock"
  elseif leisure == "swimming_pool" then class = "swimming_pool"
  elseif waterway == "riverbank" or WATER_RIVER[water] then class = "river"
  elseif natural == "water" or landuse == "reservoir" or landuse == "basin" then
    class = WATER_POND[water] and "pond" or "lake"
  end
  if not class or not isClosed then return false end
  if way:Find("covered") == "yes" or way:Find("location") == "underground" then return true end
  local area = way:Area()
  way:Layer("water", true)
  way:MinZoom(minZoomForArea(area, 2, 6))
  way:Attribute("class", class)
  SetIntermittent(way)
  if way:Find("tunnel") == "culvert" or way:Find("tunnel") == "yes" then way:Attribute("brunnel", "tunnel") end
  if way:Find("name") ~= "" and (class == "lake" or class == "river") and natural == "water" then
    way:LayerAsCentroid("water_name")
    way:MinZoom(minZoomForArea(area, 16, 9))
    way:Attribute("class", "lake")
    SetNames(way)
    SetIntermittent(way)
  end
  return true
end

local WATERWAY_MINZOOM = { river = 8, canal = 12, stream = 13, drain = 13, ditch = 13 }

local function Waterways(way, isClosed)
  local waterway = way:Find("waterway")
  local mz = WATERWAY_MINZOOM[waterway]
  if not mz or isClosed then return end
  way:Layer("waterway", false)
  way:MinZoom(mz)
  way:Attribute("class", waterway)
  SetNames(way)
  SetIntermittent(way)
  SetBrunnel(way)
end

local LANDCOVER = {
  farmland = "farmland", farm = "farmland", orchard = "farmland", vineyard = "farmland", plant_nursery = "farmland",
  glacier = "ice", ice_shelf = "ice",
  wood = "wood", forest = "wood",
  bare_rock = "rock", scree = "rock",
  fell = "grass", flowerbed = "grass", grassland = "grass", heath = "grass", scrub = "grass", shrubbery = "grass",
  tundra = "grass", grass = "grass", meadow = "grass", allotments = "grass", park = "grass", village_green = "grass",
  recreation_ground = "grass", garden = "grass", golf_course = "grass",
  wetland = "wetland", bog = "wetland", swamp = "wetland", wet_meadow = "wetland", marsh = "wetland", reedbed = "wetland",
  saltern = "wetland", tidalflat = "wetland", saltmarsh = "wetland", mangrove = "wetland",
  beach = "sand", sand = "sand", dune = "sand",
}

local LANDUSE_LANDUSE = Set { "railway", "cemetery", "military", "residential", "commercial", "industrial", "garages", "retail", "quarry" }
local LANDUSE_AMENITY = Set { "bus_station", "school", "university", "kindergarten", "college", "library", "hospital", "grave_yard" }
local LANDUSE_LEISURE = Set { "stadium", "pitch", "playground", "track" }
local LANDUSE_TOURISM = Set { "theme_park", "zoo" }
local LANDUSE_PLACE = Set { "suburb", "quarter", "neighbourhood" }

local function Landcover(way, area)
  local natural, landuse, leisure = way:Find("natural"), way:Find("landuse"), way:Find("leisure")
  local subclass
  if LANDCOVER[natural] then subclass = natural
  elseif LANDCOVER[landuse] then subclass = landuse
  elseif LANDCOVER[leisure] then subclass = leisure end
  if not subclass then return end
  local class = LANDCOVER[subclass]
  if subclass == "wetland" and LANDCOVER[way:Find("wetland")] then subclass = way:Find("wetland") end
  way:Layer("landcover", true)
  way:MinZoom(minZoomForArea(area, 4, 7))
  way:Attribute("class", class)
  way:Attribute("subclass", subclass)
end

local function Landuse(way, area)
  local landuse, amenity, leisure, tourism, place = way:Find("landuse"), way:Find("amenity"), way:Find("leisure"), way:Find("tourism"), way:Find("place")
  local class
  if LANDUSE_LANDUSE[landuse] then class = landuse
  elseif LANDUSE_AMENITY[amenity] then class = amenity == "grave_yard" and "cemetery" or amenity
  elseif LANDUSE_LEISURE[leisure] then class = leisure
  elseif LANDUSE_TOURISM[tourism] then class = tourism
  elseif LANDUSE_PLACE[place] then class = place
  elseif way:Find("waterway") == "dam" then class = "dam"
  elseif amenity == "parking" then class = "parking" end
  if not class then return end
  way:Layer("landuse", true)
  local residential = class == "residential" or class == "suburb" or class == "quarter" or class == "neighbourhood"
  way:MinZoom(minZoomForArea(area, 4, residential and 6 or 9))
  way:Attribute("class", class)
  if class == "parking" then
    local parking = way:Find("parking")
    if parking ~= "" then way:Attribute("subclass", parking) end
  end
  local access = way:Find("access")
  if access == "no" or access == "private" then way:Attribute("access", "no") end
end

local function Parks(way, area)
  local boundary, leisure = way:Find("boundary"), way:Find("leisure")
  local class
  if way:Find("maritime") == "yes" and (boundary == "protected_area" or boundary == "national_park") then class = "marine"
  elseif boundary == "national_park" or boundary == "protected_area" or leisure == "nature_reserve" then
    -- OpenMapTiles: the protection title (lower case, "_" for spaces), else the boundary, else the leisure tag.
    local title = string.lower(string.gsub(way:Find("protection_title"), " ", "_"))
    if title ~= "" then class = title
    elseif boundary ~= "" then class = boundary
    else class = leisure end
  end
  if not class then return end
  way:Layer("park", true)
  way:MinZoom(minZoomForArea(area, 4, 6))
  way:Attribute("class", class)
end

local AEROWAY_AREA = Set { "aerodrome", "heliport", "runway", "helipad", "taxiway", "apron" }

local function Aeroways(way, isClosed, area)
  local aeroway = way:Find("aeroway")
  if aeroway == "" then aeroway = way:Find("area:aeroway") end
  if not AEROWAY_AREA[aeroway] then return end
  local isArea = isClosed and (aeroway ~= "runway" and aeroway ~= "taxiway" or way:Find("area") == "yes")
  way:Layer("aeroway", isArea)
  way:MinZoom(isArea and minZoomForArea(area, 4, 10) or 11)
  way:Attribute("class", aeroway)
  local ref = way:Find("ref")
  if ref ~= "" then way:Attribute("ref", ref) end
  if aeroway == "aerodrome" then WriteAerodromeLabel(way, true) end
end

local MATERIAL_COLOUR = { cement_block = "#6a7880", brick = "#bd8161", plaster = "#dadbdb", wood = "#d48741",
  concrete = "#d3c2b0", metal = "#b7b1a6", stone = "#b4a995", mud = "#9d8b75", steel = "#b7b1a6", glass = "#5a81a0",
  traditional = "#bd8161", masonry = "#bd8161", tin = "#b7b1a6", timber_framing = "#b3b0a9", sandstone = "#b4a995", clay = "#9d8b75" }

local function Buildings(way)
  local building, part = way:Find("building"), way:Find("building:part")
  local aeroway = way:Find("aeroway")
  if building == "" and part == "" and aeroway ~= "terminal" and aeroway ~= "hangar" then return end
  if building == "no" or way:Find("location") == "underground" then return end
  way:Layer("building", true)
  way:MinZoom(13)
  local height = leadingNumber(way:Find("height")) or leadingNumber(way:Find("building:height"))
  local minHeight = leadingNumber(way:Find("min_height")) or leadingNumber(way:Find("building:min_height"))
  local levels = leadingNumber(way:Find("building:levels"))
  local minLevel = leadingNumber(way:Find("building:min_level"))
  local h = math.ceil(height or (levels and levels * LEVEL_HEIGHT) or 5)
  local mh = math.floor(minHeight or (minLevel and minLevel * LEVEL_HEIGHT) or 0)
  if h < mh then h = mh end
  way:AttributeNumeric("render_height", h, 14)
  way:AttributeNumeric("render_min_height", mh, 14)
  local colour = way:Find("building:colour")
  if colour == "" then colour = MATERIAL_COLOUR[way:Find("building:material")] or "" end
  if colour ~= "" then way:Attribute("colour", colour, 14) end
  if building ~= "" and way:Find("building:part") == "" and way:Find("has_parts") == "yes" then way:AttributeBoolean("hide_3d", true, 14) end
end

function way_function(way)
  local isClosed = way:IsClosed()
  local relations = {}
  local networks = {}
  while true do
    local rel = way:NextRelation()
    if not rel then break end
    if way:FindInRelation("type") == "boundary" then
      table.insert(relations, { admin = leadingNumber(way:FindInRelation("admin_level")) })
    else
      local n = way:FindInRelation("network")
      if n ~= "" then table.insert(networks, n) end
    end
  end
  table.sort(networks)

  if way:Find("disused") == "yes" or way:Find("highway") == "proposed" or way:Find("highway") == "abandoned" then return end

  Boundaries(way, relations)
  Roads(way, isClosed, networks)
  Waterways(way, isClosed)
  Buildings(way)

  local natural = way:Find("natural")
  if (natural == "ridge" or natural == "cliff" or natural == "arete") and not isClosed then
    -- Ridges, cliffs and aretes are lines in mountain_peak (OpenMapTiles' mountain_linestring), longer first.
    way:Layer("mountain_peak", false)
    way:MinZoom(13)
    way:Attribute("class", natural)
    SetNames(way)
    way:AttributeNumeric("_rank_order", -way:Length())
  end

  local hn = way:Find("addr:housenumber")
  if hn ~= "" and isClosed then
    way:LayerAsCentroid("housenumber")
    way:Attribute("housenumber", housenumber(hn))
  end

  if not isClosed then return end
  local area = way:Area()
  local isWater = Water(way, isClosed)
  if not isWater then
    Landcover(way, area)
    Landuse(way, area)
  end
  Parks(way, area)
  Aeroways(way, isClosed, area)
  local place = way:Find("place")
  if place ~= "" and PLACE_MINZOOM[place] and place ~= "suburb" and place ~= "quarter" and place ~= "neighbourhood" then
    way:LayerAsCentroid("place")
    -- An island or locality mapped as an area: its label point, as the node would be.
    way:MinZoom(math.max(PLACE_MINZOOM[place], minZoomForArea(area, 32, 0)))
    way:Attribute("class", place)
    SetNames(way)
  end
  if way:Find("natural") == "bay" and way:Find("name") ~= "" then
    way:LayerAsCentroid("water_name")
    way:MinZoom(minZoomForArea(area, 32, 8))
    way:Attribute("class", "bay")
    SetNames(way)
  end
  WritePoi(way, true)
end

-- Shapefile layers (pipeline/osm/natural-earth.ts, ocean.ts): the ocean ("ocean", "ocean_z<z>") and
-- Natural Earth ("ne_<layer>_z<z>"), written with their OpenMapTiles attributes in short columns.
function attribute_function(attr, layer)
  local target = string.match(layer, "^ne_(%a+)_z%d+$")
  if target == "boundary" then
    local out = { admin_level = attr.admin, disputed = attr.disputed, maritime = attr.maritime }
    if attr.adm0_l and attr.adm0_l ~= "" then out.adm0_l = attr.adm0_l end
    if attr.adm0_r and attr.adm0_r ~= "" then out.adm0_r = attr.adm0_r end
    return out
  elseif target == "place" then
    local name = attr.name
    local out = { class = attr.class, name = name, name_en = name, name_de = name, name_int = name, ["name:latin"] = name, rank = attr.rank }
    if attr.capital and attr.capital > 0 then out.capital = attr.capital end
    if attr.iso_a2 and attr.iso_a2 ~= "" then out.iso_a2 = attr.iso_a2 end
    return out
  elseif target == "waterway" then
    local out = { class = attr.class }
    if attr.name and attr.name ~= "" then
      out.name, out.name_en, out.name_de, out.name_int, out["name:latin"] = attr.name, attr.name, attr.name, attr.name, attr.name
    end
    return out
  elseif target == "landcover" then
    return { class = attr.class, subclass = attr.subclass }
  end
  return { class = attr.class }
end
