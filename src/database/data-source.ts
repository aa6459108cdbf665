import { DataSource } from 'typeorm';
import { loadConfig } from '../config/config';
import { dataSourceOptions } from './data-source-options';

/** For TypeORM's CLI (`npm run migration:generate`). The app builds its own from AppConfig. */
export default new DataSource(dataSourceOptions(loadConfig().databaseDirectUrl));
