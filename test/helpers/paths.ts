// Where things are in the repository, for tests in any folder of test/.
import path from 'node:path'

/** The repository's root. */
export const ROOT = path.resolve(import.meta.dirname, '..', '..')
/** Files the end-to-end tests read or run (sessions to import, attack scripts, child processes). */
export const E2E_FIXTURES = path.join(ROOT, 'test', 'e2e', 'fixtures')
/** Fixtures shared by unit and property tests. */
export const FIXTURES = path.join(ROOT, 'test', 'fixtures')
