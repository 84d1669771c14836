//! Geo commands: GEOADD, GEOPOS, GEODIST, GEOHASH, GEOSEARCH, GEOSEARCHSTORE and the older
//! GEORADIUS, GEORADIUSBYMEMBER (and their `_RO` forms).
//!
//! Owns: turning RESP arguments into `KvOps` calls (GEOADD is a ZADD of geohash scores;
//! the reads are ZSCORE lookups decoded; the searches are `geo_search`), Redis' option
//! parsing, order of checks and error texts, the search's sorting, COUNT and units, and
//! the replies' number formats (distances with four decimals; coordinates in Redis' human
//! long-double form). Never: hold semantics of its own beyond that shaping, or decide
//! anything by a command's name (the table chose the function).

use super::args::{self, CmdError, CmdResult, syntax};
use super::zsets::{add_flags, run_zadd_pairs};
use crate::resp::reply::{Protocol, Reply};
use hotset_core::kv::{
    Center, Found, GeoSearch, KvOps, Shape, geo_distance, geohash_text, parse_f64, point_of, score_of,
};

/// A float argument, with Redis' text for this argument when it is none.
fn float(arg: &[u8], what: &str) -> Result<f64, CmdError> {
    parse_f64(arg).ok_or_else(|| CmdError(format!("ERR {what}")))
}

/// A longitude and latitude pair, in range.
fn point(long: &[u8], lat: &[u8]) -> Result<(f64, f64), CmdError> {
    let (long, lat) = (float(long, "value is not a valid float")?, float(lat, "value is not a valid float")?);
    if score_of(long, lat).is_none() {
        return Err(CmdError(format!("ERR invalid longitude,latitude pair {long:.6},{lat:.6}")));
    }
    Ok((long, lat))
}

/// A distance unit's size in metres.
fn unit(arg: &[u8]) -> Result<f64, CmdError> {
    match arg.to_ascii_lowercase().as_slice() {
        b"m" => Ok(1.0),
        b"km" => Ok(1000.0),
        b"ft" => Ok(0.3048),
        b"mi" => Ok(1609.34),
        _ => Err(CmdError("ERR unsupported unit provided. please use M, KM, FT, MI".into())),
    }
}

/// `radius unit`: the radius in metres and the unit's size.
fn radius(a: &[&[u8]]) -> Result<(Shape, f64), CmdError> {
    let radius = float(a[0], "need numeric radius")?;
    if radius < 0.0 {
        return Err(CmdError("ERR radius cannot be negative".into()));
    }
    let metres = unit(a[1])?;
    Ok((Shape::Radius(radius * metres), metres))
}

/// `width height unit`: the box in metres and the unit's size.
fn boxed(a: &[&[u8]]) -> Result<(Shape, f64), CmdError> {
    let width = float(a[0], "need numeric width")?;
    let height = float(a[1], "need numeric height")?;
    if width < 0.0 || height < 0.0 {
        return Err(CmdError("ERR height or width cannot be negative".into()));
    }
    let metres = unit(a[2])?;
    Ok((Shape::Box { width: width * metres, height: height * metres }, metres))
}

/// A distance as Redis answers one: four decimals, a bulk string in both protocols.
fn distance_reply(metres: f64, r: &mut Reply<'_>) {
    r.bulk(format!("{metres:.4}").as_bytes());
}

/// A coordinate in Redis' human long-double form: 17 decimals of the exact value,
/// trailing zeros dropped (a bulk string in RESP2, a double in RESP3).
fn coordinate_reply(value: f64, r: &mut Reply<'_>) {
    let text = format!("{value:.17}");
    let text = text.trim_end_matches('0').trim_end_matches('.');
    match r.protocol {
        Protocol::Resp2 => r.bulk(text.as_bytes()),
        Protocol::Resp3 => {
            r.out.push(b',');
            r.out.extend_from_slice(text.as_bytes());
            r.out.extend_from_slice(b"\r\n");
        }
    }
}

/// GEOADD key [NX|XX] [CH] longitude latitude member [...].
pub fn geoadd<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let (options, at) = add_flags(a, false);
    let rest = &a[at..];
    if !rest.len().is_multiple_of(3) || (options.nx && options.xx) {
        return Err(syntax());
    }
    let mut pairs = Vec::with_capacity(rest.len() / 3);
    for triple in rest.chunks_exact(3) {
        let (long, lat) = point(triple[0], triple[1])?;
        pairs.push((score_of(long, lat).expect("checked in range"), triple[2]));
    }
    run_zadd_pairs(kv, a[1], options, &pairs, r)
}

/// GEOPOS key member [...]: each member's longitude and latitude, or a null array.
pub fn geopos<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let scores = kv.zmscore(a[1], &a[2..])?;
    r.array(scores.len());
    for score in scores {
        match score.and_then(point_of) {
            Some((long, lat)) => {
                r.array(2);
                coordinate_reply(long, r);
                coordinate_reply(lat, r);
            }
            None => r.null_array(),
        }
    }
    Ok(())
}

/// GEODIST key member1 member2 [M|KM|FT|MI]: null when either is missing.
pub fn geodist<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let metres = match a.len() {
        4 => 1.0,
        5 => unit(a[4])?,
        _ => return Err(syntax()),
    };
    let scores = kv.zmscore(a[1], &a[2..4])?;
    match (scores[0].and_then(point_of), scores[1].and_then(point_of)) {
        (Some(one), Some(two)) => distance_reply(geo_distance(one.0, one.1, two.0, two.1) / metres, r),
        _ => r.null(),
    }
    Ok(())
}

/// GEOHASH key member [...]: each member's 11-character geohash, or null.
pub fn geohash<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    let scores = kv.zmscore(a[1], &a[2..])?;
    r.array(scores.len());
    for score in scores {
        r.bulk_or_null(score.and_then(geohash_text).as_ref().map(|text| &text[..]));
    }
    Ok(())
}

/// Which search command is parsed (what its arguments may hold).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS[_RO]: longitude latitude radius unit.
    Radius { store: bool },
    /// GEORADIUSBYMEMBER[_RO]: member radius unit.
    ByMember { store: bool },
    /// GEOSEARCH: FROM... and BY... options.
    Search,
    /// GEOSEARCHSTORE: GEOSEARCH's options and STOREDIST.
    SearchStore,
}

/// A search command's arguments, parsed.
struct Request<'a> {
    search: GeoSearch,
    /// The unit's size in metres (distances are answered in the unit).
    metres: f64,
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    /// Ascending (`Some(true)`) or descending by distance; `None`: unsorted.
    ascending: Option<bool>,
    count: Option<usize>,
    store: Option<&'a [u8]>,
    store_dist: bool,
}

/// Parses a search's arguments after the key (`a` starts at the key's next argument) in
/// Redis' order of checks. For GEOSEARCHSTORE the destination was taken by the caller.
fn parse_search<'a>(a: &[&'a [u8]], form: Form, name: &str) -> Result<Request<'a>, CmdError> {
    let (mut center, mut shape, mut at) = (None, None, 0);
    match form {
        Form::Radius { .. } => {
            let (long, lat) = point(a[0], a[1])?;
            center = Some(Center::Point(long, lat));
            shape = Some(radius(&a[2..4])?);
            at = 4;
        }
        Form::ByMember { .. } => {
            center = Some(Center::Member(a[0].to_vec()));
            shape = Some(radius(&a[1..3])?);
            at = 3;
        }
        Form::Search | Form::SearchStore => {}
    }
    let searching = matches!(form, Form::Search | Form::SearchStore);
    let may_store = matches!(form, Form::Radius { store: true } | Form::ByMember { store: true });
    let mut request = Request {
        search: GeoSearch { center: Center::Point(0.0, 0.0), shape: Shape::Radius(0.0), any_limit: None },
        metres: 1.0,
        with_dist: false,
        with_hash: false,
        with_coord: false,
        ascending: None,
        count: None,
        store: None,
        store_dist: false,
    };
    let mut any = false;
    while at < a.len() {
        let (word, left) = (a[at], a.len() - at - 1);
        let is = |option: &str| args::is(word, option);
        if is("WITHDIST") {
            request.with_dist = true;
        } else if is("WITHHASH") {
            request.with_hash = true;
        } else if is("WITHCOORD") {
            request.with_coord = true;
        } else if is("ANY") {
            any = true;
        } else if is("ASC") {
            request.ascending = Some(true);
        } else if is("DESC") {
            request.ascending = Some(false);
        } else if is("COUNT") && left >= 1 {
            let count = args::int(a[at + 1])?;
            request.count = Some(
                usize::try_from(count)
                    .ok()
                    .filter(|&n| n > 0)
                    .ok_or_else(|| CmdError("ERR COUNT must be > 0".into()))?,
            );
            at += 1;
        } else if (is("STORE") || is("STOREDIST")) && left >= 1 && may_store {
            request.store = Some(a[at + 1]);
            request.store_dist = is("STOREDIST");
            at += 1;
        } else if is("STOREDIST") && form == Form::SearchStore {
            request.store_dist = true;
        } else if is("FROMMEMBER") && left >= 1 && searching && !matches!(center, Some(Center::Point(..))) {
            center = Some(Center::Member(a[at + 1].to_vec()));
            at += 1;
        } else if is("FROMLONLAT") && left >= 2 && searching && !matches!(center, Some(Center::Member(_))) {
            let (long, lat) = point(a[at + 1], a[at + 2])?;
            center = Some(Center::Point(long, lat));
            at += 2;
        } else if is("BYRADIUS") && left >= 2 && searching && !matches!(shape, Some((Shape::Box { .. }, _))) {
            shape = Some(radius(&a[at + 1..at + 3])?);
            at += 2;
        } else if is("BYBOX") && left >= 3 && searching && !matches!(shape, Some((Shape::Radius(_), _))) {
            shape = Some(boxed(&a[at + 1..at + 4])?);
            at += 3;
        } else {
            return Err(syntax());
        }
        at += 1;
    }
    let storing = request.store.is_some() || form == Form::SearchStore;
    if storing && (request.with_dist || request.with_hash || request.with_coord) {
        let what = if form == Form::SearchStore { "GEOSEARCHSTORE" } else { "STORE option in GEORADIUS" };
        return Err(CmdError(format!("ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options")));
    }
    let Some(center) = center else {
        return Err(CmdError(format!("ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}")));
    };
    let Some((shape, metres)) = shape else {
        return Err(CmdError(format!("ERR exactly one of BYRADIUS and BYBOX can be specified for {name}")));
    };
    if any && request.count.is_none() {
        return Err(CmdError("ERR the ANY argument requires COUNT argument".into()));
    }
    // COUNT without ANY returns the nearest, so it sorts.
    if request.count.is_some() && request.ascending.is_none() && !any {
        request.ascending = Some(true);
    }
    request.search = GeoSearch { center, shape, any_limit: request.count.filter(|_| any) };
    request.metres = metres;
    Ok(request)
}

/// The points to answer or store: sorted as asked, cut at COUNT.
fn ordered(mut found: Vec<Found>, request: &Request<'_>) -> Vec<Found> {
    if let Some(ascending) = request.ascending {
        found.sort_by(|a, b| {
            let order = a.distance.partial_cmp(&b.distance).unwrap_or(std::cmp::Ordering::Equal);
            if ascending { order } else { order.reverse() }
        });
    }
    if let Some(count) = request.count {
        found.truncate(count);
    }
    found
}

fn run_search<K: KvOps>(
    kv: &K,
    key: &[u8],
    request: Request<'_>,
    store_event: &'static str,
    r: &mut Reply<'_>,
) -> CmdResult {
    if let Some(dst) = request.store {
        let metres = request.metres;
        let stored = kv.geo_search_store(dst, key, &request.search, store_event, |found| {
            let by_distance = request.store_dist;
            ordered(found, &request)
                .into_iter()
                .map(|point| (point.member, if by_distance { point.distance / metres } else { point.score }))
                .collect()
        })?;
        r.int(stored as i64);
        return Ok(());
    }
    let found = kv.geo_search(key, &request.search)?.unwrap_or_default();
    let found = ordered(found, &request);
    let extra = usize::from(request.with_dist) + usize::from(request.with_hash) + usize::from(request.with_coord);
    r.array(found.len());
    for point in &found {
        if extra > 0 {
            r.array(extra + 1);
        }
        r.bulk(&point.member);
        if request.with_dist {
            distance_reply(point.distance / request.metres, r);
        }
        if request.with_hash {
            r.int(point.score as i64);
        }
        if request.with_coord {
            r.array(2);
            coordinate_reply(point.long, r);
            coordinate_reply(point.lat, r);
        }
    }
    Ok(())
}

/// GEORADIUSBYMEMBER's check that comes before its arguments: a missing key answers an
/// empty result (or stores nothing) whatever they hold.
fn missing_key_answer<K: KvOps>(kv: &K, key: &[u8], a: &[&[u8]], r: &mut Reply<'_>) -> Result<bool, CmdError> {
    if kv.key_type(key)? != "none" {
        return Ok(false);
    }
    let store = a.windows(2).rev().find(|pair| args::is(pair[0], "STORE") || args::is(pair[0], "STOREDIST"));
    match store {
        Some(pair) => {
            kv.del(&[pair[1]])?;
            r.int(0);
        }
        None => r.array(0),
    }
    Ok(true)
}

pub fn georadius<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    kv.zcard(a[1])?;
    run_search(kv, a[1], parse_search(&a[2..], Form::Radius { store: true }, "georadius")?, "georadiusstore", r)
}

pub fn georadius_ro<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    kv.zcard(a[1])?;
    run_search(kv, a[1], parse_search(&a[2..], Form::Radius { store: false }, "georadius_ro")?, "georadiusstore", r)
}

pub fn georadiusbymember<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    kv.zcard(a[1])?;
    if missing_key_answer(kv, a[1], &a[2..], r)? {
        return Ok(());
    }
    let request = parse_search(&a[2..], Form::ByMember { store: true }, "georadiusbymember")?;
    run_search(kv, a[1], request, "georadiusstore", r)
}

pub fn georadiusbymember_ro<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    kv.zcard(a[1])?;
    if kv.key_type(a[1])? == "none" {
        r.array(0);
        return Ok(());
    }
    let request = parse_search(&a[2..], Form::ByMember { store: false }, "georadiusbymember_ro")?;
    run_search(kv, a[1], request, "georadiusstore", r)
}

/// GEOSEARCH key FROMMEMBER member|FROMLONLAT lon lat BYRADIUS r unit|BYBOX w h unit
/// [ASC|DESC] [COUNT n [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH].
pub fn geosearch<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    kv.zcard(a[1])?;
    run_search(kv, a[1], parse_search(&a[2..], Form::Search, "geosearch")?, "geosearchstore", r)
}

/// GEOSEARCHSTORE destination source ... [STOREDIST].
pub fn geosearchstore<K: KvOps>(kv: &K, a: &[&[u8]], r: &mut Reply<'_>) -> CmdResult {
    kv.zcard(a[2])?;
    let mut request = parse_search(&a[3..], Form::SearchStore, "geosearchstore")?;
    request.store = Some(a[1]);
    run_search(kv, a[2], request, "geosearchstore", r)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn coordinates_print_as_redis_human_long_doubles() {
        let mut out = Vec::new();
        coordinate_reply(13.361389338970184, &mut Reply { out: &mut out, protocol: Protocol::Resp2 });
        assert_eq!(out, b"$20\r\n13.36138933897018433\r\n".to_vec(), "as Redis prints Palermo");
        let error = parse_search(&[b"FROMLONLAT", b"1", b"2"], Form::Search, "geosearch").err().unwrap().0;
        assert_eq!(error, "ERR exactly one of BYRADIUS and BYBOX can be specified for geosearch");
        assert_eq!(point(b"181", b"0").err().unwrap().0, "ERR invalid longitude,latitude pair 181.000000,0.000000");
    }
}
