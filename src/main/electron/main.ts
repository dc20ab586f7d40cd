// Electron main's entry (out/main/index.js): the shell is in app.ts.
import { runApp } from './app'

runApp()
