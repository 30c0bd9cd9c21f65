//! Unit tests of the use cases through the in-memory fakes ([`super::fakes`]): the decisions of
//! each function, in milliseconds, with no Redis and no DynamoDB. What only the real stores can
//! prove (Lua atomicity, transactions, races) stays in the `tests/` crate.

mod access_codes;
mod admit;
mod checkout;
mod confirm;
mod expire;
mod group_line;
mod hold;
mod join;
mod reconcile;
mod refund;
mod restore;
