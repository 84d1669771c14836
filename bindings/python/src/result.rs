//! `hotset.Result`: what a query, SQL statement or search answers, as Python objects.
//!
//! Owns: turning an `Answer` into the result's lists and numbers (under the GIL, after the
//! query ran without it) and the sequence protocol over its items. Never: hold anything of
//! the engine (a result outlives locks, namespaces and the database itself).

use crate::backend::Answer;
use crate::convert::{item_to_py, json_to_py, value_to_py};
use hotset_core::query::dsl;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList};

/// The answer of a query, SQL statement or search.
///
/// `items` are dicts (joined documents nested under their alias; full-text matches carry
/// `_rank` and, when asked, `_highlight` and `_snippet`); `total` is the number of
/// matches when the query asked for it; `aggregations` one dict per aggregation asked;
/// `explain` the plan and step timings when asked; `affected` what a SQL write or DDL
/// statement changed; `positions` the live-sync position of each source whose namespaces
/// the answer read (`{"app": "0/16B6C50"}`; empty without sources). A result is a sequence
/// of its items.
#[pyclass(frozen, module = "hotset", name = "Result")]
pub struct QueryResult {
    #[pyo3(get)]
    positions: Py<PyDict>,
    #[pyo3(get)]
    items: Py<PyList>,
    #[pyo3(get)]
    total: Option<u64>,
    #[pyo3(get)]
    aggregations: Py<PyList>,
    #[pyo3(get)]
    explain: Option<Py<PyAny>>,
    #[pyo3(get)]
    affected: Option<u64>,
}

impl QueryResult {
    pub fn from_answer(py: Python<'_>, answer: Answer) -> PyResult<QueryResult> {
        match answer {
            Answer::Local(result) => {
                let items = PyList::empty(py);
                for item in &result.items {
                    items.append(item_to_py(py, item)?)?;
                }
                let aggregations = PyList::empty(py);
                for aggregation in &result.aggregations {
                    aggregations.append(value_to_py(py, &dsl::aggregation_json(aggregation))?)?;
                }
                let explain = match &result.explain {
                    Some(explain) => Some(value_to_py(py, &dsl::explain_json(explain))?.unbind()),
                    None => None,
                };
                Ok(QueryResult {
                    positions: PyDict::new(py).unbind(),
                    items: items.unbind(),
                    total: result.total.map(|t| t as u64),
                    aggregations: aggregations.unbind(),
                    explain,
                    affected: None,
                })
            }
            Answer::Search(result) => {
                let items = PyList::empty(py);
                for (namespace, item) in &result.items {
                    let doc = item_to_py(py, item)?;
                    doc.cast::<PyDict>()?.set_item("_namespace", namespace)?;
                    items.append(doc)?;
                }
                Ok(QueryResult {
                    positions: PyDict::new(py).unbind(),
                    items: items.unbind(),
                    total: Some(result.total as u64),
                    aggregations: PyList::empty(py).unbind(),
                    explain: None,
                    affected: None,
                })
            }
            Answer::Wire(bytes) => {
                let answer = json_to_py(py, &bytes)?;
                let answer = answer.cast::<PyDict>().map_err(|_| {
                    crate::errors::ConnectionError::new_err("the server answered with something that is not an object")
                })?;
                let list = |key: &str| -> PyResult<Py<PyList>> {
                    match answer.get_item(key)? {
                        Some(value) => Ok(value.cast_into::<PyList>()?.unbind()),
                        None => Ok(PyList::empty(py).unbind()),
                    }
                };
                let number = |key: &str| -> PyResult<Option<u64>> {
                    answer.get_item(key)?.map(|value| value.extract::<u64>()).transpose()
                };
                let positions = match answer.get_item("positions")? {
                    Some(value) => value.cast_into::<PyDict>()?.unbind(),
                    None => PyDict::new(py).unbind(),
                };
                Ok(QueryResult {
                    positions,
                    items: list("items")?,
                    total: number("total")?,
                    aggregations: list("aggregations")?,
                    explain: answer.get_item("explain")?.map(Bound::unbind),
                    affected: number("affected")?,
                })
            }
        }
    }
}

#[pymethods]
impl QueryResult {
    fn __len__(&self, py: Python<'_>) -> usize {
        self.items.bind(py).len()
    }

    fn __iter__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyAny>> {
        Ok(self.items.bind(py).as_any().try_iter()?.into_any())
    }

    fn __getitem__<'py>(&self, py: Python<'py>, index: Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
        self.items.bind(py).as_any().get_item(index)
    }

    fn __repr__(&self, py: Python<'_>) -> String {
        let mut text = format!("Result(items={}", self.items.bind(py).len());
        if let Some(total) = self.total {
            text.push_str(&format!(", total={total}"));
        }
        let aggregations = self.aggregations.bind(py).len();
        if aggregations > 0 {
            text.push_str(&format!(", aggregations={aggregations}"));
        }
        if let Some(affected) = self.affected {
            text.push_str(&format!(", affected={affected}"));
        }
        text.push(')');
        text
    }
}
