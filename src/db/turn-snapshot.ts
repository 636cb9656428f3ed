import type { StatementSource } from './direct.js';

/**
 * One read transaction on the read-only SQLite connection for all the reads of one event-loop
 * turn. Under load a turn handles dozens of requests, and an autocommit read pays for its own
 * WAL read transaction each time (two `fcntl` locks, the wal-index header, the schema check):
 * about 3 µs of a ~7 µs binding lookup in a tight loop, more on a busy VM. Sharing it makes that
 * a cost per turn.
 *
 * What a read may see:
 * - every write of this process: any statement but a plain read on the write connection (a
 *   write, one with RETURNING, BEGIN, COMMIT, ...) ends the open transaction before it runs
 *   (`endForWrite`), so a read after a commit starts a new one (a client always sees its own
 *   writes, and those of requests answered before);
 * - a commit of another process on the same file (the CLI, a second instance) at the latest one
 *   turn later: the transaction ends in the check phase (`setImmediate`) after it began, and
 *   while that is pending the event loop does not block. One begun in a check phase (a read
 *   after a group commit) lasts through the next poll phase.
 */
export class TurnSnapshot {
  private open = false;
  private scheduled = false;
  private readonly begin;
  private readonly commit;
  private readonly rollback;

  constructor(reader: StatementSource) {
    this.begin = reader.prepare('begin');
    this.commit = reader.prepare('commit');
    this.rollback = reader.prepare('rollback');
  }

  /** Before a read: joins the turn's read transaction, starting it if needed. */
  enter(): void {
    if (this.open) return;
    this.begin.run();
    this.open = true;
    if (!this.scheduled) {
      this.scheduled = true;
      setImmediate(this.endOfTurn);
    }
  }

  /** A write is about to run on the write connection: later reads must see it. */
  endForWrite(): void {
    this.end();
  }

  /** Before the reader closes. */
  end(): void {
    if (!this.open) return;
    this.open = false;
    try {
      // A read transaction has nothing to commit; this only releases its snapshot.
      this.commit.run();
    } catch {
      try {
        this.rollback.run();
      } catch {
        // SQLite ended the transaction itself (an I/O error in a read): nothing is held. At the
        // end of a turn (setImmediate) this must not throw: it would end the process.
      }
    }
  }

  private readonly endOfTurn = (): void => {
    this.scheduled = false;
    this.end();
  };
}
