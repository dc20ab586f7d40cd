declare const __ARBOR_VERSION__: string | undefined

/** This Arbor's release (package.json's version, set by the build; 'dev' when run from source). */
export const ARBOR_VERSION = typeof __ARBOR_VERSION__ === 'string' ? __ARBOR_VERSION__ : 'dev'
