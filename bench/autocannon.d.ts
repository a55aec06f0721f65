// autocannon ships no types; the benches use a few fields of its result.
declare module 'autocannon';
