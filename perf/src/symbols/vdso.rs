//! The vDSO's symbols (`__vdso_clock_gettime`): the image the kernel maps into every
//! process as `[vdso]` is in no file, so its symbols come from the copy perf keeps in its
//! build-id cache (`~/.debug/[vdso]/BUILD_ID/vdso`), else from this process's own vDSO when
//! it is the recorded build (same kernel). Never from another build: then `[unknown]`.

use super::{buildid_dir, hex, ElfSymbols, UserSymbolsMissing};
use crate::fsio::{self, Links};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};

/// The most bytes a vDSO image is read from this process (today's are 8 KiB).
const VDSO_CAP: u64 = 1 << 20;

/// Whether a mapping's path is one of perf's vDSO names.
pub(super) fn is_vdso(path: &[u8]) -> bool {
    matches!(path, b"[vdso]" | b"[vdso32]" | b"[vdsox32]")
}

/// The symbols of the vDSO mapped as `name` (`[vdso]`) whose build-id was recorded.
/// Without a recorded build-id (pipe mode) no image can be shown to be the recorded one.
pub(super) fn vdso_symbols(name: &[u8], build_id: Option<&[u8]>) -> Result<ElfSymbols, UserSymbolsMissing> {
    let id = build_id.filter(|id| !id.is_empty()).ok_or(UserSymbolsMissing::NoFile)?;
    let mut why = UserSymbolsMissing::NoFile;
    let mut candidates = Vec::new();
    if let Some(dir) = buildid_dir() {
        candidates.push(cached_path(&dir, name, id));
    }
    for p in candidates {
        match ElfSymbols::from_file(&p) {
            Ok(s) if s.build_id() == Some(id) => return Ok(s),
            Ok(_) => why = UserSymbolsMissing::OtherBuild,
            Err(_) => {}
        }
    }
    // perf names a 64-bit process's vDSO `[vdso]`; this process is one.
    if name == b"[vdso]" {
        match own_vdso() {
            Some(s) if s.build_id() == Some(id) => return Ok(s),
            Some(_) => why = UserSymbolsMissing::OtherBuild,
            None => {}
        }
    }
    Err(why)
}

/// Where perf's build-id cache keeps the vDSO image `name` of build `id`.
fn cached_path(dir: &Path, name: &[u8], id: &[u8]) -> PathBuf {
    let name = String::from_utf8_lossy(name);
    dir.join(name.as_ref()).join(hex(id)).join("vdso")
}

/// This process's vDSO, as mapped (`[vdso]` in /proc/self/maps, read through
/// /proc/self/mem), in a file of memory for the symbol reader.
fn own_vdso() -> Option<ElfSymbols> {
    let maps = fsio::read_text(Path::new("/proc/self/maps"), Links::Follow, 64 << 20).ok()?;
    let range = maps.lines().find(|l| l.ends_with(" [vdso]"))?.split(' ').next()?;
    let (start, end) = range.split_once('-')?;
    let (start, end) = (u64::from_str_radix(start, 16).ok()?, u64::from_str_radix(end, 16).ok()?);
    let len = end.checked_sub(start).filter(|&n| n > 0 && n <= VDSO_CAP)?;
    let mem = fsio::open_regular(Path::new("/proc/self/mem"), Links::Follow).ok()?;
    let mut image = vec![0u8; len as usize];
    mem.read_exact_at(&mut image, start).ok()?;
    let file = fsio::memory_file("vdso", &image).ok()?;
    ElfSymbols::from_opened(Path::new("[vdso]"), file).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn this_process_vdso_is_read_with_its_functions() {
        let Some(own) = own_vdso() else {
            return; // no vDSO (vdso=0 on the kernel's command line)
        };
        let id = own
            .build_id()
            .expect("the kernel builds its vDSO with a build-id")
            .to_vec();
        assert!(!own.is_empty());
        // Its build-id finds it; another build's does not.
        assert!(vdso_symbols(b"[vdso]", Some(&id)).is_ok());
        let other = vec![0u8; id.len()];
        assert!(matches!(
            vdso_symbols(b"[vdso]", Some(&other)),
            Err(UserSymbolsMissing::NoFile | UserSymbolsMissing::OtherBuild)
        ));
        assert!(vdso_symbols(b"[vdso]", None).is_err());
    }
}
