// @ts-check
// A CommonJS module, the only kind the runtime gives `require`. Node built-ins load on first
// require: a script that needs none starts faster.
module.exports = (/** @type {string} */ name) => require(`node:${name}`);
