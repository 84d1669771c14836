//! Test support shared by Hotset's test suites: a naive reference model of the document
//! engine over plain JSON values, and seeded generators of schemas, documents and
//! queries for property tests. Never used by production code.
#![forbid(unsafe_code)]

pub mod durable;
pub mod generate;
pub mod mariadb;
pub mod postgres;
pub mod reference;
