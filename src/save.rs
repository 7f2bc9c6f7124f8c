//! Files named by a server, written into a directory the user chose. The
//! server's name is reduced to one plain file name, so it never becomes a
//! path outside that directory, and the file is written beside it and
//! renamed into place, so a link planted under that name is replaced, not
//! followed.

use std::path::{Path, PathBuf};

/// The last component of a server's file name, cleaned: no directory part
/// (`/` or `\`), no control character, no drive colon, no leading dots
/// (no `..`, no hidden file), at most 200 bytes. `None` when nothing is left.
pub fn confined_name(name: &str) -> Option<String> {
    let last = name.rsplit(['/', '\\']).next().unwrap_or_default();
    let cleaned: String = last.chars().filter(|c| !c.is_control() && *c != ':').collect();
    let cleaned = cleaned.trim().trim_start_matches('.').trim();
    let mut end = cleaned.len().min(200);
    while !cleaned.is_char_boundary(end) {
        end -= 1;
    }
    (!cleaned[..end].is_empty()).then(|| cleaned[..end].to_owned())
}

/// `dir` joined with the confined form of `name` (or `fallback` when
/// nothing of it is left): always a file directly inside `dir`.
pub fn confined_path(dir: &Path, name: &str, fallback: &str) -> PathBuf {
    dir.join(confined_name(name).unwrap_or_else(|| fallback.to_owned()))
}

/// Writes `bytes` as the server-named file `name` in `dir` (created if
/// missing); returns the path written.
pub fn save(dir: &Path, name: &str, fallback: &str, bytes: &[u8]) -> std::io::Result<PathBuf> {
    std::fs::create_dir_all(dir)?;
    let path = confined_path(dir, name, fallback);
    let file = path.file_name().map(|n| n.to_string_lossy().into_owned()).unwrap_or_default();
    let temp = dir.join(format!(".{file}.tmp-{}", std::process::id()));
    std::fs::write(&temp, bytes)?;
    std::fs::rename(&temp, &path).inspect_err(|_| {
        let _ = std::fs::remove_file(&temp);
    })?;
    Ok(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_server_name_never_leaves_the_directory() {
        let dir = Path::new("/srv/out");
        let hostile = [
            "../../../../tmp/tdx-hostile.txt",
            "/etc/passwd",
            "..\\..\\windows\\win.ini",
            "a/../../b.txt",
            "\u{1b}]0;pwned\u{7}.txt",
            "..",
            ".",
            "",
            "C:\\boot.ini",
            "c:evil",
            "sub/",
            "...",
            " .. ",
            "name\0.txt",
            "\u{202e}txt.exe",
        ];
        for name in hostile {
            let path = confined_path(dir, name, "fallback.txt");
            assert_eq!(path.parent(), Some(dir), "{name:?} -> {}", path.display());
            let file = path.file_name().unwrap().to_str().unwrap();
            assert!(!file.starts_with('.') && !file.contains(['/', '\\', ':']), "{name:?} -> {file:?}");
            assert!(!file.chars().any(char::is_control), "{name:?} -> {file:?}");
        }
        assert_eq!(confined_name("600000.txt").as_deref(), Some("600000.txt"));
        assert_eq!(confined_name("../../../../tmp/tdx-hostile.txt").as_deref(), Some("tdx-hostile.txt"));
        assert_eq!(confined_name(".."), None);
        assert_eq!(confined_name(&"长".repeat(100)).map(|n| n.len()), Some(198));
    }

    #[test]
    fn saving_replaces_a_planted_link_instead_of_following_it() {
        let root = std::env::temp_dir().join(format!("tdx-save-{}", std::process::id()));
        let (dir, outside) = (root.join("out"), root.join("outside.txt"));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(&outside, b"untouched").unwrap();
        #[cfg(unix)]
        std::os::unix::fs::symlink(&outside, dir.join("600000.txt")).unwrap();
        let path = save(&dir, "../600000.txt", "x.txt", b"text").unwrap();
        assert_eq!(path, dir.join("600000.txt"));
        assert_eq!(std::fs::read(&path).unwrap(), b"text");
        assert_eq!(std::fs::read(&outside).unwrap(), b"untouched");
        std::fs::remove_dir_all(root).unwrap();
    }
}
