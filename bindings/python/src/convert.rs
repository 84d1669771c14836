//! Conversions between Python objects and the engine's values.
//!
//! Owns: Python → `serde_json::Value` (documents, keys, condition values), stored
//! document bytes and server replies → Python objects in one pass (a serde visitor that
//! builds dicts, lists and strings directly: no intermediate `Value`, no JSON text handed
//! to Python's `json`), and result items (joined documents, rank, highlights) as dicts.
//! Never: accept a Python value JSON cannot hold faithfully (NaN, integers past 64 bits,
//! non-string keys, cycles): those are refused with a `TypeError` or `ValueError`.

use hotset_core::query::Item;
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyFloat, PyList, PyString, PyTuple};
use serde::de::{self, DeserializeSeed, Deserializer, MapAccess, SeqAccess, Visitor};
use serde_json::{Map, Number, Value};

/// Deepest nesting a Python value may have; deeper (or a list that contains itself) is
/// refused rather than overflowing the stack. Below serde_json's own limit (128), so
/// whatever is stored reads back.
const DEPTH_MAX: usize = 100;

/// A Python value as JSON.
pub fn to_value(obj: &Bound<'_, PyAny>) -> PyResult<Value> {
    to_value_at(obj, 0)
}

fn to_value_at(obj: &Bound<'_, PyAny>, depth: usize) -> PyResult<Value> {
    if depth > DEPTH_MAX {
        return Err(too_deep());
    }
    if let Ok(text) = obj.cast::<PyString>() {
        return Ok(Value::String(text.to_str()?.to_owned()));
    }
    if let Ok(dict) = obj.cast::<PyDict>() {
        let mut map = Map::with_capacity(dict.len());
        for (key, value) in dict.iter() {
            let key = key.cast::<PyString>().map_err(|_| bad_key(&key))?;
            map.insert(key.to_str()?.to_owned(), to_value_at(&value, depth + 1)?);
        }
        return Ok(Value::Object(map));
    }
    // bool before int: Python's bool is a subclass of int.
    if let Ok(flag) = obj.cast::<PyBool>() {
        return Ok(Value::Bool(flag.is_true()));
    }
    if obj.is_instance_of::<pyo3::types::PyInt>() {
        return int(obj).map(|n| match n {
            Int::Signed(n) => Value::from(n),
            Int::Unsigned(n) => Value::from(n),
        });
    }
    if let Ok(float) = obj.cast::<PyFloat>() {
        return number(float.value()).map(Value::Number);
    }
    if obj.is_none() {
        return Ok(Value::Null);
    }
    if let Ok(list) = obj.cast::<PyList>() {
        return list.iter().map(|item| to_value_at(&item, depth + 1)).collect::<PyResult<_>>().map(Value::Array);
    }
    if let Ok(tuple) = obj.cast::<PyTuple>() {
        return tuple.iter().map(|item| to_value_at(&item, depth + 1)).collect::<PyResult<_>>().map(Value::Array);
    }
    Err(cannot_store(obj))
}

/// A Python value as compact JSON text: what a transaction keeps of a document until
/// its commit (a third of the memory of a `Value` tree, and one allocation). The same
/// values are accepted and refused as by `to_value`.
pub fn to_json(obj: &Bound<'_, PyAny>) -> PyResult<Vec<u8>> {
    let mut out = Vec::with_capacity(256);
    write_json(obj, 0, &mut out)?;
    Ok(out)
}

fn write_json(obj: &Bound<'_, PyAny>, depth: usize, out: &mut Vec<u8>) -> PyResult<()> {
    if depth > DEPTH_MAX {
        return Err(too_deep());
    }
    if let Ok(text) = obj.cast::<PyString>() {
        write_str(text.to_str()?, out);
    } else if let Ok(dict) = obj.cast::<PyDict>() {
        out.push(b'{');
        for (i, (key, value)) in dict.iter().enumerate() {
            if i > 0 {
                out.push(b',');
            }
            write_str(key.cast::<PyString>().map_err(|_| bad_key(&key))?.to_str()?, out);
            out.push(b':');
            write_json(&value, depth + 1, out)?;
        }
        out.push(b'}');
    } else if let Ok(flag) = obj.cast::<PyBool>() {
        out.extend_from_slice(if flag.is_true() { b"true" } else { b"false" });
    } else if obj.is_instance_of::<pyo3::types::PyInt>() {
        match int(obj)? {
            Int::Signed(n) => out.extend_from_slice(n.to_string().as_bytes()),
            Int::Unsigned(n) => out.extend_from_slice(n.to_string().as_bytes()),
        }
    } else if let Ok(float) = obj.cast::<PyFloat>() {
        out.extend_from_slice(number(float.value())?.to_string().as_bytes());
    } else if obj.is_none() {
        out.extend_from_slice(b"null");
    } else if let Ok(list) = obj.cast::<PyList>() {
        write_items(list.iter(), depth, out)?;
    } else if let Ok(tuple) = obj.cast::<PyTuple>() {
        write_items(tuple.iter(), depth, out)?;
    } else {
        return Err(cannot_store(obj));
    }
    Ok(())
}

fn write_items<'py>(items: impl Iterator<Item = Bound<'py, PyAny>>, depth: usize, out: &mut Vec<u8>) -> PyResult<()> {
    out.push(b'[');
    for (i, item) in items.enumerate() {
        if i > 0 {
            out.push(b',');
        }
        write_json(&item, depth + 1, out)?;
    }
    out.push(b']');
    Ok(())
}

/// A string as JSON, escaped as serde_json escapes it.
fn write_str(text: &str, out: &mut Vec<u8>) {
    serde_json::to_writer(&mut *out, text).expect("writing to a Vec does not fail");
}

enum Int {
    Signed(i64),
    Unsigned(u64),
}

fn int(obj: &Bound<'_, PyAny>) -> PyResult<Int> {
    if let Ok(n) = obj.extract::<i64>() {
        return Ok(Int::Signed(n));
    }
    if let Ok(n) = obj.extract::<u64>() {
        return Ok(Int::Unsigned(n));
    }
    Err(PyValueError::new_err(format!("integer {obj} does not fit in 64 bits")))
}

fn number(f: f64) -> PyResult<Number> {
    Number::from_f64(f)
        .ok_or_else(|| PyValueError::new_err(format!("{f} has no JSON form (NaN and infinities are refused)")))
}

fn too_deep() -> PyErr {
    PyValueError::new_err(format!("value nested deeper than {DEPTH_MAX} levels (or containing itself)"))
}

fn bad_key(key: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!("document keys must be strings, got {}", type_name(key)))
}

fn cannot_store(obj: &Bound<'_, PyAny>) -> PyErr {
    PyTypeError::new_err(format!(
        "{} cannot be stored: documents hold dict, list, tuple, str, int, float, bool and None",
        type_name(obj)
    ))
}

fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type().name().map(|n| n.to_string()).unwrap_or_else(|_| "this value".into())
}

/// JSON text (a stored document, a server reply) as Python objects.
pub fn json_to_py<'py>(py: Python<'py>, bytes: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    let mut deserializer = serde_json::Deserializer::from_slice(bytes);
    let value = Seed(py)
        .deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value))
        .map_err(|e| crate::errors::Error::new_err(format!("could not read a document: {e}")))?;
    Ok(value)
}

/// A `serde_json::Value` as Python objects.
pub fn value_to_py<'py>(py: Python<'py>, value: &Value) -> PyResult<Bound<'py, PyAny>> {
    Ok(match value {
        Value::Null => py.None().into_bound(py),
        Value::Bool(b) => PyBool::new(py, *b).to_owned().into_any(),
        Value::Number(n) => match (n.as_i64(), n.as_u64()) {
            (Some(i), _) => i.into_pyobject(py)?.into_any(),
            (None, Some(u)) => u.into_pyobject(py)?.into_any(),
            _ => PyFloat::new(py, n.as_f64().unwrap_or(f64::NAN)).into_any(),
        },
        Value::String(s) => PyString::new(py, s).into_any(),
        Value::Array(items) => {
            let list = PyList::empty(py);
            for item in items {
                list.append(value_to_py(py, item)?)?;
            }
            list.into_any()
        }
        Value::Object(map) => {
            let dict = PyDict::new(py);
            for (key, item) in map {
                dict.set_item(key, value_to_py(py, item)?)?;
            }
            dict.into_any()
        }
    })
}

/// One result item: the document, its joined documents under their aliases, and for a
/// full-text query `_rank`, `_highlight` and `_snippet`, as the JSON form has them.
pub fn item_to_py<'py>(py: Python<'py>, item: &Item) -> PyResult<Bound<'py, PyAny>> {
    let doc = json_to_py(py, &item.doc)?;
    if item.joined.is_empty() && item.text.is_none() {
        return Ok(doc);
    }
    let dict = doc.cast::<PyDict>()?;
    for (alias, docs) in &item.joined {
        let list = PyList::empty(py);
        for joined in docs {
            list.append(json_to_py(py, joined)?)?;
        }
        dict.set_item(alias.as_ref(), list)?;
    }
    if let Some(text) = &item.text {
        // Ranks are f32; through their shortest decimal form they read as written.
        let rank = format!("{}", text.rank).parse::<f64>().unwrap_or(0.0);
        dict.set_item("_rank", rank)?;
        for (key, marked) in [("_highlight", &text.highlight), ("_snippet", &text.snippet)] {
            if !marked.is_empty() {
                let fields = PyDict::new(py);
                for (field, text) in marked {
                    fields.set_item(field, text)?;
                }
                dict.set_item(key, fields)?;
            }
        }
    }
    Ok(doc)
}

/// Builds Python objects straight from the JSON tokens.
struct Seed<'py>(Python<'py>);

impl<'de, 'py> DeserializeSeed<'de> for Seed<'py> {
    type Value = Bound<'py, PyAny>;
    fn deserialize<D: Deserializer<'de>>(self, deserializer: D) -> Result<Self::Value, D::Error> {
        deserializer.deserialize_any(self)
    }
}

fn py_error<E: de::Error>(error: PyErr) -> E {
    E::custom(error.to_string())
}

impl<'de, 'py> Visitor<'de> for Seed<'py> {
    type Value = Bound<'py, PyAny>;

    fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("a JSON value")
    }
    fn visit_bool<E: de::Error>(self, v: bool) -> Result<Self::Value, E> {
        Ok(PyBool::new(self.0, v).to_owned().into_any())
    }
    fn visit_i64<E: de::Error>(self, v: i64) -> Result<Self::Value, E> {
        Ok(v.into_pyobject(self.0).map_err(|e| E::custom(e.to_string()))?.into_any())
    }
    fn visit_u64<E: de::Error>(self, v: u64) -> Result<Self::Value, E> {
        Ok(v.into_pyobject(self.0).map_err(|e| E::custom(e.to_string()))?.into_any())
    }
    fn visit_f64<E: de::Error>(self, v: f64) -> Result<Self::Value, E> {
        Ok(PyFloat::new(self.0, v).into_any())
    }
    fn visit_str<E: de::Error>(self, v: &str) -> Result<Self::Value, E> {
        Ok(PyString::new(self.0, v).into_any())
    }
    fn visit_unit<E: de::Error>(self) -> Result<Self::Value, E> {
        Ok(self.0.None().into_bound(self.0))
    }
    fn visit_none<E: de::Error>(self) -> Result<Self::Value, E> {
        self.visit_unit()
    }
    fn visit_seq<A: SeqAccess<'de>>(self, mut seq: A) -> Result<Self::Value, A::Error> {
        let list = PyList::empty(self.0);
        while let Some(item) = seq.next_element_seed(Seed(self.0))? {
            list.append(item).map_err(py_error)?;
        }
        Ok(list.into_any())
    }
    fn visit_map<A: MapAccess<'de>>(self, mut map: A) -> Result<Self::Value, A::Error> {
        let dict = PyDict::new(self.0);
        while let Some(key) = map.next_key_seed(Seed(self.0))? {
            let value = map.next_value_seed(Seed(self.0))?;
            dict.set_item(key, value).map_err(py_error)?;
        }
        Ok(dict.into_any())
    }
}
