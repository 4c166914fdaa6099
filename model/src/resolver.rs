//! How the model names a kernel PC without knowing a symbol table: the kernel's table
//! (upcmp's `symbols`), code loaded at run time ([`crate::code::WithLoadedCode`]) and
//! the tests implement it.

/// Names kernel PCs: the kernel's symbol table implements it.
pub trait KernelResolver {
    /// The function containing `pc` and its module (`None` for the core kernel); `None`
    /// when no symbol covers it.
    fn resolve_kernel(&self, pc: u64) -> Option<(&str, Option<&str>)>;
}
