// Prisma 7's configuration for Studio (scripts/studio.ts passes --config): empty on purpose. The database comes with
// --url; the project's prisma.config.ts is Prisma 6.19's and stays out of Prisma 7's way.
export default {};
