package io.statestream.fs;

import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.attribute.PosixFilePermission;
import java.util.EnumSet;
import java.util.Set;
import org.apache.hadoop.fs.FileStatus;
import org.apache.hadoop.fs.Path;
import org.apache.hadoop.fs.RawLocalFileSystem;
import org.apache.hadoop.fs.permission.FsPermission;

/**
 * Hadoop's raw local file system, setting permissions and reading links through java.nio.
 *
 * <p>Without Hadoop's native library, RawLocalFileSystem runs a shell command (chmod, readlink)
 * for each file it creates and for both sides of each rename: some 7 ms each, dozens per
 * micro-batch for a streaming query's checkpoint. Files that are symbolic links still go through
 * Hadoop's own code.
 */
public class NioRawLocalFileSystem extends RawLocalFileSystem {
  private static final PosixFilePermission[] BITS = {
    PosixFilePermission.OTHERS_EXECUTE, PosixFilePermission.OTHERS_WRITE,
    PosixFilePermission.OTHERS_READ, PosixFilePermission.GROUP_EXECUTE,
    PosixFilePermission.GROUP_WRITE, PosixFilePermission.GROUP_READ,
    PosixFilePermission.OWNER_EXECUTE, PosixFilePermission.OWNER_WRITE,
    PosixFilePermission.OWNER_READ,
  };

  static Set<PosixFilePermission> posixPermissions(short mode) {
    Set<PosixFilePermission> permissions = EnumSet.noneOf(PosixFilePermission.class);
    for (int bit = 0; bit < BITS.length; bit++) {
      if ((mode & (1 << bit)) != 0) {
        permissions.add(BITS[bit]);
      }
    }
    return permissions;
  }

  @Override
  public void setPermission(Path p, FsPermission permission) throws IOException {
    Files.setPosixFilePermissions(pathToFile(p).toPath(), posixPermissions(permission.toShort()));
  }

  @Override
  public FileStatus getFileLinkStatus(Path f) throws IOException {
    if (Files.isSymbolicLink(pathToFile(f).toPath())) {
      return super.getFileLinkStatus(f);
    }
    return getFileStatus(f);
  }
}
