//! A skills folder as one archive, the form it travels in as a layer of a
//! plugin's OCI artifact: a tar of its files only, in path order, each owned
//! by 0:0 with mode 0644 and time 0, so that the same folder always packs to
//! the same bytes (and digest). An archive is read back under the rules of
//! a folder (the paths a skill file may have, the limits of a plugin's
//! skills) and those of an archive that may come from anyone: no absolute
//! path, no `..`, no path twice, and nothing but files and folders (no
//! links, devices or FIFOs). It is read whole or refused whole.

use std::collections::BTreeMap;
use std::io::Read;

use super::{PATH_RULE, SkillFile, Tally, usable_path};

/// The archive of a folder's `files` (by path under it, as
/// [`super::SkillSet::files`] holds them).
///
/// # Errors
/// A path the archive format cannot hold (none that a skills folder has).
pub fn pack(files: &BTreeMap<String, SkillFile>) -> std::io::Result<Vec<u8>> {
    let mut builder = tar::Builder::new(Vec::new());
    for (path, file) in files {
        let mut header = tar::Header::new_gnu();
        header.set_entry_type(tar::EntryType::Regular);
        header.set_size(file.bytes.len() as u64);
        header.set_mode(0o644);
        header.set_uid(0);
        header.set_gid(0);
        header.set_mtime(0);
        builder.append_data(&mut header, path, &file.bytes[..])?;
    }
    builder.into_inner()
}

/// The files of the folder packed in `archive`, by path under it; the
/// error says what in it is refused.
pub fn unpack(archive: &[u8]) -> Result<BTreeMap<String, SkillFile>, String> {
    let not_tar = |e: std::io::Error| format!("it is not a tar archive a skills folder packs to: {e}");
    let mut files = BTreeMap::new();
    let mut tally = Tally::default();
    let mut reader = tar::Archive::new(archive);
    for entry in reader.entries().map_err(not_tar)? {
        let mut entry = entry.map_err(not_tar)?;
        let raw = entry.path_bytes().into_owned();
        let shown = String::from_utf8_lossy(&raw).into_owned();
        let kind = entry.header().entry_type();
        if !kind.is_file() && !kind.is_dir() {
            return Err(format!(
                "{shown:?} is {}; a skills archive holds only files and folders",
                what_kind(kind)
            ));
        }
        let path = folder_path(&raw).map_err(|why| format!("{shown:?} {why}"))?;
        if kind.is_dir() {
            continue;
        }
        if path.is_empty() {
            return Err(format!("{shown:?} is a file with no name"));
        }
        tally.add(entry.size()).map_err(|why| format!("it holds {why}"))?;
        let mut bytes = Vec::with_capacity(entry.size() as usize);
        entry.read_to_end(&mut bytes).map_err(not_tar)?;
        if files.contains_key(&path) {
            return Err(format!("it holds {path:?} twice"));
        }
        files.insert(path.clone(), SkillFile::new(&path, bytes));
    }
    Ok(files)
}

/// The `/`-separated path under the folder that the archive's `raw` path
/// names (`.` and empty segments dropped); the error says why it names
/// none a skill file may have.
fn folder_path(raw: &[u8]) -> Result<String, String> {
    let path = std::str::from_utf8(raw).map_err(|_| "is not UTF-8".to_owned())?;
    if path.starts_with('/') {
        return Err("is an absolute path; a skills archive holds paths under its folder".to_owned());
    }
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty() && *s != ".").collect();
    if segments.contains(&"..") {
        return Err("climbs out of its folder (..); a skills archive holds paths under its folder".to_owned());
    }
    let joined = segments.join("/");
    if !usable_path(&joined) {
        return Err(format!("is refused: {PATH_RULE}"));
    }
    Ok(joined)
}

/// What an entry of `kind` (neither file nor folder) is, in words.
fn what_kind(kind: tar::EntryType) -> String {
    if kind.is_symlink() {
        "a symbolic link".to_owned()
    } else if kind.is_hard_link() {
        "a hard link".to_owned()
    } else if kind.is_character_special() || kind.is_block_special() {
        "a device".to_owned()
    } else if kind.is_fifo() {
        "a FIFO".to_owned()
    } else {
        format!("an entry of type {:?}", char::from(kind.as_byte()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn files(list: &[(&str, &str)]) -> BTreeMap<String, SkillFile> {
        list.iter()
            .map(|(path, text)| (path.to_string(), SkillFile::new(path, text.as_bytes().to_vec())))
            .collect()
    }

    /// An archive of one entry of `kind` at `path`, written as is (the
    /// builder's own checks would refuse the hostile paths).
    fn one_entry(path: &[u8], kind: tar::EntryType, data: &[u8]) -> Vec<u8> {
        let mut header = tar::Header::new_gnu();
        header.as_old_mut().name[..path.len()].copy_from_slice(path);
        header.set_entry_type(kind);
        header.set_size(data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        let mut builder = tar::Builder::new(Vec::new());
        builder.append(&header, data).unwrap();
        builder.into_inner().unwrap()
    }

    #[test]
    fn a_folder_packs_to_the_same_bytes_and_reads_back_whole() {
        let long = format!("deep/{}/SKILL.md", "a".repeat(120));
        let folder = files(&[
            ("git-workflow/SKILL.md", "---\nname: git-workflow\n---\n"),
            ("git-workflow/references/commit-messages.md", "# Commits\n"),
            (&long, "long paths travel too"),
        ]);
        let packed = pack(&folder).unwrap();
        assert_eq!(packed, pack(&folder).unwrap(), "the same folder, the same bytes");
        let back = unpack(&packed).unwrap();
        assert_eq!(back.keys().collect::<Vec<_>>(), folder.keys().collect::<Vec<_>>());
        for (path, file) in &folder {
            assert_eq!(back[path].digest, file.digest, "{path}");
            assert_eq!(back[path].mime_type, file.mime_type, "{path}");
        }
    }

    #[test]
    fn what_could_reach_outside_the_folder_or_is_no_file_is_refused() {
        use tar::EntryType;
        let cases: [(&[u8], EntryType, &str); 7] = [
            (b"../escape.md", EntryType::Regular, "climbs out of its folder"),
            (b"skill/../../escape.md", EntryType::Regular, "climbs out of its folder"),
            (b"/etc/passwd", EntryType::Regular, "is an absolute path"),
            (b"skill/link", EntryType::Symlink, "is a symbolic link"),
            (b"skill/hard", EntryType::Link, "is a hard link"),
            (b"skill/null", EntryType::Char, "is a device"),
            (b"skill/fifo", EntryType::Fifo, "is a FIFO"),
        ];
        for (path, kind, said) in cases {
            let err = unpack(&one_entry(path, kind, b"")).err().unwrap();
            assert!(err.contains(said), "{}: {err}", String::from_utf8_lossy(path));
        }
        let err = unpack(&one_entry(b"skill/with space.md", EntryType::Regular, b""))
            .err()
            .unwrap();
        assert!(err.contains("letters, digits"), "{err}");
        let mut twice = one_entry(b"skill/SKILL.md", EntryType::Regular, b"a");
        twice.truncate(twice.len() - 1024);
        twice.extend(one_entry(b"./skill/SKILL.md", EntryType::Regular, b"b"));
        assert!(unpack(&twice).err().unwrap().contains("twice"));
        assert!(unpack(b"not a tar archive at all, but long enough to be read as a header").is_err());
    }

    #[test]
    fn an_archive_over_the_limits_of_a_plugins_skills_is_refused() {
        let many: Vec<(String, &str)> = (0..=super::super::MAX_FILES_PER_FOLDER)
            .map(|i| (format!("skill/f{i}.md"), ""))
            .collect();
        let many: Vec<(&str, &str)> = many.iter().map(|(p, t)| (p.as_str(), *t)).collect();
        let err = unpack(&pack(&files(&many)).unwrap()).err().unwrap();
        assert!(err.contains("more than 4096 files"), "{err}");
        // A header that declares more bytes than allowed is refused before they are read.
        let mut header = tar::Header::new_gnu();
        header.set_path("skill/huge.bin").unwrap();
        header.set_size(super::super::MAX_BYTES_PER_FOLDER + 1);
        header.set_cksum();
        let mut huge = header.as_bytes().to_vec();
        huge.extend([0u8; 1024]);
        let err = unpack(&huge).err().unwrap();
        assert!(err.contains("67108864 bytes"), "{err}");
    }
}
