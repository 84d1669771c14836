//! Columns: one typed value slot per row for an indexed field.
//!
//! Owns: dense per-row storage of a field's values (as collation keys for strings), read
//! by filters and sorts without touching the document. Rows are addressed by `u32` id.
//! Never: parse documents (values arrive already converted), or decide what a query means
//! (`for_each` hands values to the caller's predicate).
//!
//! Invariant: a row that is not set reads as empty (no values).

use crate::collate::Collation;
use crate::doc::FieldPath;
use crate::value::{FieldType, OrdF64, Scalar, ScalarRef};
use std::sync::Arc;

/// What identifies a column: two indexes on the same field with the same type,
/// collation and arity share one column.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ColumnSpec {
    /// The field the column reads.
    pub path: FieldPath,
    /// The type every value is converted to.
    pub field_type: FieldType,
    /// How string values compare (they are kept as collation keys).
    pub collation: Collation,
    /// The field may hold an array: any number of values per row.
    pub array: bool,
    /// The values pass through to a text index and are not kept: filters and sorts on
    /// the field read the document (a column of whole texts would double their memory).
    pub transient: bool,
}

#[derive(Debug)]
enum Data {
    Int(Vec<i64>),
    Double(Vec<f64>),
    Bool(Vec<bool>),
    Str(Vec<Option<Arc<[u8]>>>),
    /// Array fields: any number of values per row (empty box = empty).
    Multi(Vec<Box<[Scalar]>>),
}

/// A typed column. `present` marks the rows holding a value in the fixed-width forms.
#[derive(Debug)]
pub struct Column {
    /// What the column holds.
    pub spec: ColumnSpec,
    data: Data,
    present: Vec<u64>,
    string_bytes: usize,
}

impl Column {
    /// An empty column: every row reads as empty.
    pub fn new(spec: ColumnSpec) -> Column {
        let data = match (spec.array, spec.field_type) {
            (true, _) => Data::Multi(Vec::new()),
            (false, FieldType::Int) => Data::Int(Vec::new()),
            (false, FieldType::Double) => Data::Double(Vec::new()),
            (false, FieldType::Bool) => Data::Bool(Vec::new()),
            (false, FieldType::String) => Data::Str(Vec::new()),
        };
        Column { spec, data, present: Vec::new(), string_bytes: 0 }
    }

    fn is_present(&self, row: u32) -> bool {
        let (word, bit) = (row as usize / 64, row % 64);
        self.present.get(word).is_some_and(|w| w & (1 << bit) != 0)
    }

    fn set_present(&mut self, row: u32, on: bool) {
        let (word, bit) = (row as usize / 64, row % 64);
        if word >= self.present.len() {
            self.present.resize(word + 1, 0);
        }
        if on {
            self.present[word] |= 1 << bit;
        } else {
            self.present[word] &= !(1 << bit);
        }
    }

    /// Stores the values of `row`. Values must have the column's type (checked by the
    /// caller when converting); a non-array column takes at most one.
    pub fn set(&mut self, row: u32, values: Vec<Scalar>) {
        assert!(self.spec.array || values.len() <= 1, "several values in a scalar column");
        if self.spec.transient {
            return;
        }
        self.clear(row);
        let at = row as usize;
        if let Data::Multi(rows) = &mut self.data {
            grow(rows, at);
            self.string_bytes += values.iter().map(scalar_heap_bytes).sum::<usize>();
            rows[at] = values.into_boxed_slice();
            return;
        }
        let value = values.into_iter().next();
        let present = matches!(&value, Some(v) if *v != Scalar::Null);
        match &mut self.data {
            Data::Multi(_) => unreachable!("handled above"),
            Data::Int(rows) => {
                grow(rows, at);
                if let Some(Scalar::Int(v)) = value {
                    rows[at] = v;
                }
            }
            Data::Double(rows) => {
                grow(rows, at);
                if let Some(Scalar::Double(v)) = value {
                    rows[at] = v.0;
                }
            }
            Data::Bool(rows) => {
                grow(rows, at);
                if let Some(Scalar::Bool(v)) = value {
                    rows[at] = v;
                }
            }
            Data::Str(rows) => {
                grow(rows, at);
                if let Some(Scalar::Str(v)) = value {
                    self.string_bytes += v.len();
                    // Moved, not cloned: the column keeps the extracted string.
                    rows[at] = Some(v);
                }
            }
        }
        self.set_present(row, present);
    }

    /// Empties `row` (a deleted row, or a document without the field).
    pub fn clear(&mut self, row: u32) {
        let at = row as usize;
        match &mut self.data {
            Data::Multi(rows) => {
                if let Some(slot) = rows.get_mut(at) {
                    self.string_bytes -= slot.iter().map(scalar_heap_bytes).sum::<usize>();
                    *slot = Box::default();
                }
            }
            Data::Str(rows) => {
                if let Some(Some(old)) = rows.get_mut(at).map(Option::take) {
                    self.string_bytes -= old.len();
                }
            }
            _ => {}
        }
        if !self.present.is_empty() {
            self.set_present(row, false);
        }
    }

    /// Calls `f` on each value of `row` until it returns true; returns whether it did.
    #[inline]
    pub fn any(&self, row: u32, mut f: impl FnMut(ScalarRef<'_>) -> bool) -> bool {
        let at = row as usize;
        match &self.data {
            Data::Multi(rows) => rows.get(at).is_some_and(|vals| vals.iter().filter_map(Scalar::as_ref).any(f)),
            Data::Str(rows) => match rows.get(at) {
                Some(Some(s)) => f(ScalarRef::Str(s)),
                _ => false,
            },
            _ => self.first(row).is_some_and(f),
        }
    }

    /// The first value of `row` (the sort key), or `None` when empty.
    #[inline]
    pub fn first(&self, row: u32) -> Option<ScalarRef<'_>> {
        let at = row as usize;
        match &self.data {
            Data::Multi(rows) => rows.get(at)?.iter().find_map(Scalar::as_ref),
            Data::Str(rows) => rows.get(at)?.as_deref().map(ScalarRef::Str),
            Data::Int(rows) if self.is_present(row) => Some(ScalarRef::Int(rows[at])),
            Data::Double(rows) if self.is_present(row) => Some(ScalarRef::Double(rows[at])),
            Data::Bool(rows) if self.is_present(row) => Some(ScalarRef::Bool(rows[at])),
            _ => None,
        }
    }

    /// The raw parts of a scalar int column: values and the presence bitset (bit `row % 64`
    /// of word `row / 64`), for tight loops over many rows.
    pub fn int_parts(&self) -> Option<(&[i64], &[u64])> {
        match &self.data {
            Data::Int(values) => Some((values, &self.present)),
            _ => None,
        }
    }

    /// Whether this column holds arrays (any number of values per row).
    pub fn holds_arrays(&self) -> bool {
        matches!(self.data, Data::Multi(_))
    }

    /// Whether `row` has no value (absent, `null` or an empty array).
    pub fn is_empty_at(&self, row: u32) -> bool {
        self.first(row).is_none()
    }

    /// The first value of `row`, owned (strings shared, not copied): what `values`
    /// starts with, without collecting the rest.
    pub fn first_owned(&self, row: u32) -> Option<Scalar> {
        let at = row as usize;
        match &self.data {
            Data::Multi(rows) => rows.get(at)?.iter().find(|v| **v != Scalar::Null).cloned(),
            Data::Str(rows) => rows.get(at)?.clone().map(Scalar::Str),
            _ => self.first(row).map(ScalarRef::to_owned),
        }
    }

    /// The values of `row` as owned scalars (for index maintenance).
    pub fn values(&self, row: u32) -> Vec<Scalar> {
        let at = row as usize;
        match &self.data {
            // Cloning a `Scalar::Str` shares the stored string (an `Arc`), never copies it.
            Data::Multi(rows) => rows
                .get(at)
                .map_or_else(Vec::new, |values| values.iter().filter(|v| **v != Scalar::Null).cloned().collect()),
            Data::Str(rows) => rows.get(at).cloned().flatten().map(Scalar::Str).into_iter().collect(),
            _ => self.first(row).map(ScalarRef::to_owned).into_iter().collect(),
        }
    }

    /// Approximate bytes used, for memory accounting.
    pub fn memory_bytes(&self) -> usize {
        let slots = match &self.data {
            Data::Int(v) => v.capacity() * 8,
            Data::Double(v) => v.capacity() * 8,
            Data::Bool(v) => v.capacity(),
            Data::Str(v) => v.capacity() * 16,
            Data::Multi(v) => v.capacity() * 16,
        };
        slots + self.present.capacity() * 8 + self.string_bytes
    }
}

fn grow<T: Default>(rows: &mut Vec<T>, at: usize) {
    if rows.len() <= at {
        rows.resize_with(at + 1, T::default);
    }
}

fn scalar_heap_bytes(value: &Scalar) -> usize {
    match value {
        Scalar::Str(s) => s.len() + std::mem::size_of::<Scalar>(),
        _ => std::mem::size_of::<Scalar>(),
    }
}

impl Default for OrdF64 {
    fn default() -> Self {
        OrdF64(0.0)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(field_type: FieldType, array: bool) -> ColumnSpec {
        ColumnSpec { path: FieldPath::new("f"), field_type, collation: Collation::None, array, transient: false }
    }

    #[test]
    fn set_clear_and_read_back() {
        let mut c = Column::new(spec(FieldType::Int, false));
        c.set(5, vec![Scalar::Int(7)]);
        assert_eq!(c.first(5), Some(ScalarRef::Int(7)));
        assert_eq!(c.first(4), None);
        assert_eq!(c.first(1000), None);
        c.set(5, vec![Scalar::Null]);
        assert!(c.is_empty_at(5));

        let mut s = Column::new(spec(FieldType::String, true));
        s.set(0, vec![Scalar::str(b"a"), Scalar::str(b"b")]);
        assert!(s.any(0, |v| v == ScalarRef::Str(b"b")));
        assert_eq!(s.values(0).len(), 2);
        s.clear(0);
        assert!(s.values(0).is_empty());
        assert_eq!(s.string_bytes, 0);
    }
}
