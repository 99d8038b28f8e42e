//! The stand-in for `guard/` in a build without the `guard` feature: no guard process can exist, so
//! [`GroupChild`](crate::GroupChild)'s `Option<Guard>` is always `None`.

/// No value of this type can be made.
#[derive(Debug)]
pub(crate) enum Guard {}

impl Guard {
    pub(crate) fn id(&self) -> u32 {
        match *self {}
    }
}
