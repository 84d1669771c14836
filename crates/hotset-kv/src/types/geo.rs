//! Geo: points on the Earth kept in a sorted set, scored by their 52-bit geohash.
//!
//! Owns: Redis' geohash (longitude and latitude interleaved, 26 steps each, latitude
//! limited to ±85.05112878 as Web Mercator is), decoding a score back to the centre of its
//! cell, the haversine distance on Redis' Earth radius, the standard 11-character GEOHASH
//! text, and GEOSEARCH's walk: the cell around the centre at a step that fits the search,
//! its eight neighbours (those the shape cannot reach left out), each a score range read
//! in order, and every point in them checked against the circle or box. Redis' test
//! suite compares results with its own computations point by point, so each rule follows
//! Redis' (learned from its documented behaviour and sources, not copied).
//!
//! Must never: store a point outside the encodable range (GEOADD refuses it), or answer
//! a member whose cell does not decode.

use std::ops::{Deref, DerefMut};

use crate::access::{KvResult, ShardGroup};
use crate::error::KvError;
use crate::notify::class;
use crate::store::shard::Shard;
use crate::types::zset::{ScoreBound, SortedSet};
use crate::value::Value;

/// Longitude limits.
pub const LONG_MIN: f64 = -180.0;
/// Longitude limits.
pub const LONG_MAX: f64 = 180.0;
/// Latitude limits (Web Mercator's).
pub const LAT_MIN: f64 = -85.051_128_78;
/// Latitude limits (Web Mercator's).
pub const LAT_MAX: f64 = 85.051_128_78;
/// Steps (bits per coordinate) of a stored geohash.
const STEP_MAX: u32 = 26;
/// Redis' Earth radius, in metres.
const EARTH_RADIUS: f64 = 6_372_797.560_856;
/// Half the Mercator projection's width, in metres (the step estimate starts there).
const MERCATOR_MAX: f64 = 20_037_726.37;

/// A geohash: interleaved bits and how many steps each coordinate has.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
struct Hash {
    bits: u64,
    step: u32,
}

impl Hash {
    /// The "no cell" hash (a neighbour left out).
    fn is_zero(self) -> bool {
        self.bits == 0 && self.step == 0
    }
}

/// A cell: its longitude and latitude ranges.
#[derive(Debug, Clone, Copy)]
struct Area {
    long: (f64, f64),
    lat: (f64, f64),
}

/// Spreads the low 32 bits of `x` to the even bit positions.
fn spread(x: u32) -> u64 {
    let mut x = u64::from(x);
    x = (x | (x << 16)) & 0x0000_FFFF_0000_FFFF;
    x = (x | (x << 8)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x << 4)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x << 2)) & 0x3333_3333_3333_3333;
    (x | (x << 1)) & 0x5555_5555_5555_5555
}

/// Gathers the even bit positions of `x` into 32 bits.
fn squash(x: u64) -> u32 {
    let mut x = x & 0x5555_5555_5555_5555;
    x = (x | (x >> 1)) & 0x3333_3333_3333_3333;
    x = (x | (x >> 2)) & 0x0F0F_0F0F_0F0F_0F0F;
    x = (x | (x >> 4)) & 0x00FF_00FF_00FF_00FF;
    x = (x | (x >> 8)) & 0x0000_FFFF_0000_FFFF;
    ((x | (x >> 16)) & 0x0000_0000_FFFF_FFFF) as u32
}

/// Encodes a point in the given ranges at `step` bits per coordinate (latitude in the
/// even bits, longitude in the odd ones); `None` outside the ranges.
fn encode_in(long: f64, lat: f64, long_range: (f64, f64), lat_range: (f64, f64), step: u32) -> Option<Hash> {
    if !(LONG_MIN..=LONG_MAX).contains(&long) || !(LAT_MIN..=LAT_MAX).contains(&lat) {
        return None;
    }
    if !(lat_range.0..=lat_range.1).contains(&lat) || !(long_range.0..=long_range.1).contains(&long) {
        return None;
    }
    let scale = (1u64 << step) as f64;
    let lat_offset = (lat - lat_range.0) / (lat_range.1 - lat_range.0) * scale;
    let long_offset = (long - long_range.0) / (long_range.1 - long_range.0) * scale;
    Some(Hash { bits: spread(lat_offset as u32) | (spread(long_offset as u32) << 1), step })
}

fn encode(long: f64, lat: f64, step: u32) -> Option<Hash> {
    encode_in(long, lat, (LONG_MIN, LONG_MAX), (LAT_MIN, LAT_MAX), step)
}

/// The cell of `hash` in the given ranges.
fn decode_in(hash: Hash, long_range: (f64, f64), lat_range: (f64, f64)) -> Option<Area> {
    if hash.is_zero() {
        return None;
    }
    let (lat_cell, long_cell) = (f64::from(squash(hash.bits)), f64::from(squash(hash.bits >> 1)));
    let cells = (1u64 << hash.step) as f64;
    let (lat_scale, long_scale) = (lat_range.1 - lat_range.0, long_range.1 - long_range.0);
    Some(Area {
        lat: (lat_range.0 + lat_cell / cells * lat_scale, lat_range.0 + (lat_cell + 1.0) / cells * lat_scale),
        long: (long_range.0 + long_cell / cells * long_scale, long_range.0 + (long_cell + 1.0) / cells * long_scale),
    })
}

fn decode(hash: Hash) -> Option<Area> {
    decode_in(hash, (LONG_MIN, LONG_MAX), (LAT_MIN, LAT_MAX))
}

/// The score GEOADD stores for a point; `None` outside the encodable range.
pub fn score_of(long: f64, lat: f64) -> Option<f64> {
    encode(long, lat, STEP_MAX).map(|hash| hash.bits as f64)
}

/// The point a score stands for: the centre of its cell, clamped to the limits.
pub fn point_of(score: f64) -> Option<(f64, f64)> {
    let area = decode(Hash { bits: score as u64, step: STEP_MAX })?;
    let long = ((area.long.0 + area.long.1) / 2.0).clamp(LONG_MIN, LONG_MAX);
    let lat = ((area.lat.0 + area.lat.1) / 2.0).clamp(LAT_MIN, LAT_MAX);
    Some((long, lat))
}

/// GEOHASH's 11 characters for a score: the point re-encoded over the whole globe (±90
/// latitude, as standard geohashes are), 52 bits, the last character padding.
pub fn geohash_text(score: f64) -> Option<[u8; 11]> {
    const ALPHABET: &[u8; 32] = b"0123456789bcdefghjkmnpqrstuvwxyz";
    let (long, lat) = point_of(score)?;
    let hash = encode_in(long, lat, (-180.0, 180.0), (-90.0, 90.0), STEP_MAX)?;
    let mut text = [b'0'; 11];
    for (i, c) in text.iter_mut().enumerate().take(10) {
        *c = ALPHABET[((hash.bits >> (52 - (i + 1) * 5)) & 0x1f) as usize];
    }
    Some(text)
}

fn radians(degrees: f64) -> f64 {
    degrees * (std::f64::consts::PI / 180.0)
}

fn degrees(radians: f64) -> f64 {
    radians / (std::f64::consts::PI / 180.0)
}

fn lat_distance(lat1: f64, lat2: f64) -> f64 {
    EARTH_RADIUS * (radians(lat2) - radians(lat1)).abs()
}

/// The haversine distance between two points, in metres.
pub fn distance(long1: f64, lat1: f64, long2: f64, lat2: f64) -> f64 {
    let v = ((radians(long2) - radians(long1)) / 2.0).sin();
    if v == 0.0 {
        return lat_distance(lat1, lat2);
    }
    let (lat1, lat2) = (radians(lat1), radians(lat2));
    let u = ((lat2 - lat1) / 2.0).sin();
    let a = u * u + lat1.cos() * lat2.cos() * v * v;
    2.0 * EARTH_RADIUS * a.sqrt().asin()
}

/// What a search covers, in metres.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Shape {
    /// A circle of this radius.
    Radius(f64),
    /// A box this wide and high, centred on the point.
    Box {
        /// East to west, in metres.
        width: f64,
        /// North to south, in metres.
        height: f64,
    },
}

/// Where a search is centred.
#[derive(Debug, Clone, PartialEq)]
pub enum Center {
    /// A member of the set (FROMMEMBER, GEORADIUSBYMEMBER).
    Member(Vec<u8>),
    /// A point (FROMLONLAT, GEORADIUS).
    Point(f64, f64),
}

/// A point a search found.
#[derive(Debug, Clone, PartialEq)]
pub struct Found {
    /// The member.
    pub member: Vec<u8>,
    /// Its distance from the centre, in metres.
    pub distance: f64,
    /// Its stored score (the geohash).
    pub score: f64,
    /// Its longitude (its cell's centre).
    pub long: f64,
    /// Its latitude (its cell's centre).
    pub lat: f64,
}

/// The shape's distance from (`long`, `lat`) to the point, when the point is inside.
fn within(shape: Shape, long: f64, lat: f64, point: (f64, f64)) -> Option<f64> {
    match shape {
        Shape::Radius(radius) => Some(distance(long, lat, point.0, point.1)).filter(|d| *d <= radius),
        Shape::Box { width, height } => {
            if lat_distance(point.1, lat) > height / 2.0 || distance(point.0, point.1, long, point.1) > width / 2.0 {
                return None;
            }
            Some(distance(long, lat, point.0, point.1))
        }
    }
}

/// The step whose cells fit a search of `radius` metres at latitude `lat`.
fn steps_for(radius: f64, lat: f64) -> u32 {
    if radius == 0.0 {
        return STEP_MAX;
    }
    let (mut range, mut step) = (radius, 1i32);
    while range < MERCATOR_MAX {
        range *= 2.0;
        step += 1;
    }
    step -= 2;
    if !(-66.0..=66.0).contains(&lat) {
        step -= 1;
        if !(-80.0..=80.0).contains(&lat) {
            step -= 1;
        }
    }
    step.clamp(1, STEP_MAX as i32) as u32
}

/// Odd bit positions (longitude's); even ones (latitude's) are its complement.
const ODD: u64 = 0xaaaa_aaaa_aaaa_aaaa;

/// A hash moved one cell along the coordinate in the `lane` bit positions (`ODD`:
/// longitude, east for `d` > 0; `!ODD`: latitude, north). The other lane's ones fill the
/// gaps so a carry or borrow runs through them, then are masked off.
fn moved(hash: Hash, lane: u64, d: i32) -> Hash {
    if d == 0 {
        return hash;
    }
    let width = 64 - hash.step * 2;
    let (own, other) = (hash.bits & lane, hash.bits & !lane);
    let filler = !lane >> width;
    let own = if d > 0 { own.wrapping_add(filler + 1) } else { (own | filler).wrapping_sub(filler + 1) };
    Hash { bits: (own & (lane >> width)) | other, step: hash.step }
}

/// The cells to read for a search around (`long`, `lat`): the centre's, then north, south,
/// east, west, north-east, north-west, south-east, south-west (zero where left out).
fn search_cells(shape: Shape, long: f64, lat: f64) -> [Hash; 9] {
    let (half_height, half_width) = match shape {
        Shape::Radius(radius) => (radius, radius),
        Shape::Box { width, height } => (height / 2.0, width / 2.0),
    };
    let lat_delta = degrees(half_height / EARTH_RADIUS);
    let long_delta_top = degrees(half_width / EARTH_RADIUS / radians(lat + lat_delta).cos());
    let long_delta_bottom = degrees(half_width / EARTH_RADIUS / radians(lat - lat_delta).cos());
    let long_delta = if lat < 0.0 { long_delta_bottom } else { long_delta_top };
    let (min_long, max_long) = (long - long_delta, long + long_delta);
    let (min_lat, max_lat) = (lat - lat_delta, lat + lat_delta);
    let radius = match shape {
        Shape::Radius(radius) => radius,
        Shape::Box { width, height } => ((width / 2.0).powi(2) + (height / 2.0).powi(2)).sqrt(),
    };
    let cells_at = |step: u32| {
        let hash = encode(long, lat, step).unwrap_or_default();
        let neighbour = |dx: i32, dy: i32| moved(moved(hash, ODD, dx), !ODD, dy);
        [
            hash,
            neighbour(0, 1),
            neighbour(0, -1),
            neighbour(1, 0),
            neighbour(-1, 0),
            neighbour(1, 1),
            neighbour(-1, 1),
            neighbour(1, -1),
            neighbour(-1, -1),
        ]
    };
    let mut step = steps_for(radius, lat);
    let mut cells = cells_at(step);
    let reaches = |cells: &[Hash; 9]| {
        let area = |hash| decode(hash).unwrap_or(Area { long: (0.0, 0.0), lat: (0.0, 0.0) });
        area(cells[1]).lat.1 < max_lat
            || area(cells[2]).lat.0 > min_lat
            || area(cells[3]).long.1 < max_long
            || area(cells[4]).long.0 > min_long
    };
    if step > 1 && reaches(&cells) {
        step -= 1;
        cells = cells_at(step);
    }
    if step >= 2
        && let Some(area) = decode(cells[0])
    {
        let zero = Hash::default();
        if area.lat.0 < min_lat {
            for i in [2, 8, 7] {
                cells[i] = zero;
            }
        }
        if area.lat.1 > max_lat {
            for i in [1, 5, 6] {
                cells[i] = zero;
            }
        }
        if area.long.0 < min_long {
            for i in [4, 8, 6] {
                cells[i] = zero;
            }
        }
        if area.long.1 > max_long {
            for i in [3, 7, 5] {
                cells[i] = zero;
            }
        }
    }
    cells
}

/// The points of `set` inside `shape` around (`long`, `lat`), in the order the cells
/// are read; with `limit`, stops once that many are found (ANY).
fn points_within(set: &SortedSet, shape: Shape, long: f64, lat: f64, limit: Option<usize>) -> Vec<Found> {
    let cells = search_cells(shape, long, lat);
    let mut found = Vec::new();
    let mut last: Option<usize> = None;
    for (i, cell) in cells.iter().enumerate() {
        if cell.is_zero() {
            continue;
        }
        // A cell equal to the one read just before is read once (Redis compares with the
        // last one read after the first).
        if let Some(previous) = last.filter(|&previous| previous > 0)
            && cells[previous] == *cell
        {
            continue;
        }
        if limit.is_some_and(|limit| found.len() >= limit) {
            break;
        }
        let shift = 52 - cell.step * 2;
        let (min, max) = ((cell.bits << shift) as f64, ((cell.bits + 1) << shift) as f64);
        let (start, end) =
            set.score_span(ScoreBound { value: min, exclusive: false }, ScoreBound { value: max, exclusive: true });
        for (member, score) in set.range(start, end) {
            let Some(point) = point_of(score) else { continue };
            if let Some(distance) = within(shape, long, lat, point) {
                found.push(Found { member: member.to_vec(), distance, score, long: point.0, lat: point.1 });
            }
            if limit.is_some_and(|limit| found.len() >= limit) {
                break;
            }
        }
        last = Some(i);
    }
    found
}

/// A GEOSEARCH, parsed.
#[derive(Debug, Clone, PartialEq)]
pub struct GeoSearch {
    /// Where the search is centred.
    pub center: Center,
    /// What it covers.
    pub shape: Shape,
    /// ANY with COUNT: stop once this many are found.
    pub any_limit: Option<usize>,
}

impl<S: Deref<Target = Shard>> ShardGroup<S> {
    /// GEOSEARCH, GEORADIUS, GEORADIUSBYMEMBER: the points found (unsorted), `None` when
    /// the key is missing. A FROMMEMBER centre that is not a member is an error.
    pub fn geo_search(&self, key: &[u8], search: &GeoSearch, now: u64) -> KvResult<Option<Vec<Found>>> {
        let (shard, key) = self.shard(key)?;
        let Some(set) = shard.read_zset(key, now)? else { return Ok(None) };
        let (long, lat) = match &search.center {
            Center::Point(long, lat) => (*long, *lat),
            Center::Member(member) => set.score(member).and_then(point_of).ok_or(KvError::GeoMemberMissing)?,
        };
        Ok(Some(points_within(set, search.shape, long, lat, search.any_limit)))
    }
}

impl<S: DerefMut<Target = Shard>> ShardGroup<S> {
    /// GEOSEARCHSTORE and GEORADIUS ... STORE: stores `found` (already sorted and cut) at
    /// `dst` as a sorted set scored by geohash or, with `by_distance`, by distance in the
    /// caller's unit; an empty result deletes it. Their count.
    pub fn geo_store(
        &mut self,
        dst: &[u8],
        found: &[(Vec<u8>, f64)],
        now: u64,
        event: &'static str,
    ) -> KvResult<usize> {
        let (shard, dst) = self.shard_mut(dst)?;
        if found.is_empty() {
            if shard.remove(dst, now).is_some() {
                shard.event(class::GENERIC, "del", dst.bytes);
            }
            return Ok(0);
        }
        let set: SortedSet = found.iter().map(|(member, score)| (member.as_slice(), *score)).collect();
        shard.put(dst, now, Value::ZSet(Box::new(set)), None);
        shard.event(class::ZSET, event, dst.bytes);
        Ok(found.len())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn points_round_trip_through_their_scores() {
        // Palermo, as Redis' documentation shows it.
        let score = score_of(13.361389, 38.115556).unwrap();
        assert_eq!(score, 3_479_099_956_230_698.0);
        let (long, lat) = point_of(score).unwrap();
        assert!((long - 13.361389).abs() < 1e-5 && (lat - 38.115556).abs() < 1e-5);
        assert_eq!(&geohash_text(score).unwrap(), b"sqc8b49rny0");
        assert!(score_of(181.0, 0.0).is_none() && score_of(0.0, 86.0).is_none());
        let catania = point_of(score_of(15.087269, 37.502669).unwrap()).unwrap();
        let metres = distance(long, lat, catania.0, catania.1);
        assert!((metres - 166_274.151_6).abs() < 0.01, "{metres}");
    }

    #[test]
    fn searches_find_the_points_inside_the_shape() {
        let places =
            [("Palermo", 13.361389, 38.115556), ("Catania", 15.087269, 37.502669), ("Rome", 12.496366, 41.902782)];
        let set: SortedSet =
            places.iter().map(|(name, long, lat)| (name.as_bytes(), score_of(*long, *lat).unwrap())).collect();
        let names = |found: Vec<Found>| {
            let mut names: Vec<String> = found.into_iter().map(|f| String::from_utf8(f.member).unwrap()).collect();
            names.sort();
            names
        };
        assert_eq!(names(points_within(&set, Shape::Radius(200_000.0), 15.0, 37.0, None)), ["Catania", "Palermo"]);
        assert_eq!(names(points_within(&set, Shape::Radius(100_000.0), 15.0, 37.0, None)), ["Catania"]);
        let wide = Shape::Box { width: 400_000.0, height: 400_000.0 };
        assert_eq!(names(points_within(&set, wide, 15.0, 37.0, None)), ["Catania", "Palermo"]);
        assert_eq!(points_within(&set, Shape::Radius(1e7), 15.0, 37.0, Some(1)).len(), 1);
    }
}
